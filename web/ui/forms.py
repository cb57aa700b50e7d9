"""The training form. Its limits and rules are `jobs.services`', shared with the API,
with the same messages; the service decides the dataset and the model."""

from __future__ import annotations

from typing import Any

from carril_web.errors import ValidationFailed
from django import forms
from django.core.validators import MaxValueValidator
from jobs.labels import NAME_MAX, NOTE_MAX, TAG_MAX, TAGS_MAX, tags_clean
from jobs.services import TRAINING_LIMITS, imgsz_problem, seeds_problem

VERSION_PREFIX = "version:"


def _seeds(raw: str) -> list[int]:
    try:
        seeds = [int(part) for part in raw.replace(",", " ").split()]
    except ValueError as exc:
        raise forms.ValidationError("Whole numbers, separated by commas.") from exc
    _rule(seeds_problem(seeds))
    return seeds


def _rule(problem: str | None) -> None:
    if problem:
        raise forms.ValidationError(problem)


def _limited(name: str, *, label: str, initial: int) -> forms.IntegerField:
    low, high = TRAINING_LIMITS[name]
    return forms.IntegerField(label=label, min_value=low, max_value=high, initial=initial)


class TrainingForm(forms.Form):
    dataset = forms.ChoiceField(label="Dataset")
    model = forms.ChoiceField(
        label="Architecture or base model",
        help_text="A fresh architecture, or a registered model version to fine-tune.",
    )
    epochs = _limited("epochs", label="Epochs", initial=50)
    imgsz = _limited("imgsz", label="Image size", initial=640)
    batch = _limited("batch", label="Batch", initial=16)
    seeds = forms.CharField(
        label="Seeds",
        initial="42",
        max_length=100,
        help_text="One to five, e.g. 42, 123, 456; each trains fully and the best is kept.",
    )
    gpus = _limited("gpus", label="GPUs", initial=1)
    name = forms.CharField(label="Name", required=False, max_length=NAME_MAX)
    tags = forms.CharField(
        label="Tags",
        required=False,
        max_length=TAGS_MAX * (TAG_MAX + 2),
        help_text=f"Up to {TAGS_MAX}, separated by commas: letters, digits, '-' and '_'.",
    )
    note = forms.CharField(
        label="Note", required=False, max_length=NOTE_MAX, widget=forms.Textarea(attrs={"rows": 2})
    )

    def __init__(
        self,
        *args: Any,
        datasets: list[tuple[str, str]],
        architectures: list[str],
        versions: list[tuple[str, str]],
        max_gpus: int | None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].choices = datasets
        model_choices: list[Any] = [("Architectures", [(a, a) for a in architectures])]
        if versions:
            model_choices.append(
                (
                    "Fine-tune a model version",
                    [(VERSION_PREFIX + v, label) for v, label in versions],
                )
            )
        self.fields["model"].choices = model_choices
        if max_gpus:
            self.fields["gpus"].widget.attrs["max"] = max_gpus
            self.fields["gpus"].validators.append(MaxValueValidator(max_gpus))
            self.fields["gpus"].help_text = f"This machine has {max_gpus}."
        for name in ("epochs", "imgsz", "batch", "gpus"):
            self.fields[name].widget.attrs.setdefault("inputmode", "numeric")

    def clean_tags(self) -> list[str]:
        try:
            return tags_clean(self.cleaned_data["tags"])
        except ValidationFailed as exc:
            raise forms.ValidationError(exc.details["fields"]["tags"]) from exc

    def clean_seeds(self) -> list[int]:
        return _seeds(self.cleaned_data["seeds"])

    def clean_imgsz(self) -> int:
        _rule(imgsz_problem(self.cleaned_data["imgsz"]))
        return self.cleaned_data["imgsz"]

    def model_requested(self) -> str:
        """What the service takes: an architecture name or a model version's id."""
        model = self.cleaned_data["model"]
        return model.removeprefix(VERSION_PREFIX)
