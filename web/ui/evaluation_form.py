"""The evaluate form (ADR 0042). Its limits are `jobs.services`' and the API's: the
service decides the model version, the dataset and its split."""

from __future__ import annotations

from typing import Any

from django import forms
from jobs.services import EVALUATION_SPLITS, TRAINING_LIMITS, imgsz_problem


class EvaluationForm(forms.Form):
    dataset = forms.ChoiceField(label="Dataset")
    split = forms.ChoiceField(
        label="Split",
        choices=[(s, s) for s in EVALUATION_SPLITS],
        initial="val",
        help_text="The dataset's images the model is validated on.",
    )
    imgsz = forms.IntegerField(
        label="Image size",
        min_value=TRAINING_LIMITS["imgsz"][0],
        max_value=TRAINING_LIMITS["imgsz"][1],
        help_text="A multiple of 32; the size the version was trained at unless you change it.",
    )
    conf = forms.FloatField(
        label="Confidence",
        min_value=0,
        max_value=1,
        initial=0.001,
        help_text="Lowest confidence counted; ultralytics validates at 0.001.",
    )
    iou = forms.FloatField(label="IoU (NMS)", min_value=0, max_value=1, initial=0.7)

    def __init__(self, *args: Any, datasets: list[tuple[str, str]], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].choices = datasets
        self.fields["imgsz"].widget.attrs.setdefault("inputmode", "numeric")
        for name in ("conf", "iou"):
            self.fields[name].widget.attrs.update(step="any", inputmode="decimal")

    def clean_imgsz(self) -> int:
        value = self.cleaned_data["imgsz"]
        problem = imgsz_problem(value)
        if problem:
            raise forms.ValidationError(problem)
        return value
