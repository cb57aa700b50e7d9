"""The training form. Its checks are about shape; the backend decides what is allowed."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import MaxValueValidator

VERSION_PREFIX = "version:"


def _seeds(raw: str) -> list[int]:
    try:
        seeds = [int(part) for part in raw.replace(",", " ").split()]
    except ValueError as exc:
        raise forms.ValidationError("Whole numbers, separated by commas.") from exc
    if not 1 <= len(seeds) <= 5:
        raise forms.ValidationError("Between one and five seeds.")
    if len(set(seeds)) != len(seeds):
        raise forms.ValidationError("Each seed once.")
    return seeds


class TrainingForm(forms.Form):
    dataset = forms.ChoiceField(label="Dataset")
    model = forms.ChoiceField(
        label="Architecture or base model",
        help_text="A fresh architecture, or a registered model version to fine-tune.",
    )
    epochs = forms.IntegerField(label="Epochs", min_value=1, max_value=1000, initial=50)
    imgsz = forms.IntegerField(label="Image size", min_value=32, max_value=2048, initial=640)
    batch = forms.IntegerField(label="Batch", min_value=1, max_value=1024, initial=16)
    seeds = forms.CharField(
        label="Seeds",
        initial="42",
        max_length=100,
        help_text="One to five, e.g. 42, 123, 456; each trains fully and the best is kept.",
    )
    gpus = forms.IntegerField(label="GPUs", min_value=1, max_value=64, initial=1)

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

    def clean_seeds(self) -> list[int]:
        return _seeds(self.cleaned_data["seeds"])

    def base_version_id(self) -> str | None:
        model = self.cleaned_data["model"]
        return model[len(VERSION_PREFIX) :] if model.startswith(VERSION_PREFIX) else None
