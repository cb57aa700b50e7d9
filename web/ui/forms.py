"""The training form. Its limits and rules are `jobs.services`', shared with the API,
with the same messages; the service decides the dataset and the model."""

from __future__ import annotations

from typing import Any

from carril_web.errors import ValidationFailed
from django import forms
from django.core.validators import MaxValueValidator
from jobs.labels import NAME_MAX, NOTE_MAX, TAG_MAX, TAGS_MAX, tags_clean
from jobs.services import (
    AUGMENTATIONS,
    OPTIMIZERS,
    TRAINING_DEFAULTS,
    TRAINING_LIMITS,
    imgsz_problem,
    lr0_problem,
    optimizer_problem,
    seeds_problem,
)
from jobs.services import augmentation_problem as _augmentation_problem

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


def _limited(name: str, *, label: str, **kwargs: Any) -> forms.IntegerField:
    low, high = TRAINING_LIMITS[name]
    return forms.IntegerField(
        label=label, min_value=low, max_value=high, initial=TRAINING_DEFAULTS[name], **kwargs
    )


def _checked_by(problem: Any) -> Any:
    """A field validator from one of `jobs.services`' rules (the API uses the same)."""

    def validate(value: Any) -> None:
        _rule(problem(value))

    return validate


def _augmentation(name: str, *, label: str) -> forms.FloatField:
    low, high, default = AUGMENTATIONS[name]
    field = forms.FloatField(
        label=label,
        initial=default,
        required=False,  # blank: the default, as in the API
        validators=[_checked_by(lambda value: _augmentation_problem(name, value))],
        help_text=f"{low:g} to {high:g}; default {default:g}.",
    )
    field.widget.attrs.update(step="any", inputmode="decimal")
    return field


# The hyperparameters' fields, in the order the form shows them.
AUGMENTATION_LABELS = {
    "mosaic": "Mosaic",
    "fliplr": "Left-right flip",
    "hsv_h": "Hue (HSV h)",
    "hsv_s": "Saturation (HSV s)",
    "hsv_v": "Brightness (HSV v)",
    "scale": "Scale",
    "degrees": "Rotation (degrees)",
}


class TrainingForm(forms.Form):
    dataset = forms.ChoiceField(label="Dataset")
    model = forms.ChoiceField(
        label="Architecture or base model",
        help_text="A fresh architecture, or a registered model version to fine-tune.",
    )
    epochs = _limited("epochs", label="Epochs")
    imgsz = _limited("imgsz", label="Image size")
    batch = _limited("batch", label="Batch")
    seeds = forms.CharField(
        label="Seeds",
        initial=", ".join(str(seed) for seed in TRAINING_DEFAULTS["seeds"]),
        max_length=100,
        help_text="One to five, e.g. 42, 123, 456; each trains fully and the best is kept.",
    )
    gpus = _limited("gpus", label="GPUs")
    patience = _limited(
        "patience",
        label="Early stopping patience",
        required=False,
        help_text="Epochs without validation improvement before a seed stops; 0 turns it off.",
    )
    # A text field with a list, not a ChoiceField, so a refused value gets the rule's
    # message, the API's, rather than Django's own.
    optimizer = forms.CharField(
        label="Optimizer",
        initial=TRAINING_DEFAULTS["optimizer"],
        required=False,
        validators=[_checked_by(optimizer_problem)],
        widget=forms.Select(choices=[(name, name) for name in OPTIMIZERS]),
        help_text="auto picks the optimizer and its learning rate.",
    )
    lr0 = forms.FloatField(
        label="Initial learning rate",
        required=False,
        validators=[_checked_by(lr0_problem)],
        help_text="Blank: the optimizer chooses; given with auto, the optimizer is SGD.",
    )
    mosaic = _augmentation("mosaic", label=AUGMENTATION_LABELS["mosaic"])
    fliplr = _augmentation("fliplr", label=AUGMENTATION_LABELS["fliplr"])
    hsv_h = _augmentation("hsv_h", label=AUGMENTATION_LABELS["hsv_h"])
    hsv_s = _augmentation("hsv_s", label=AUGMENTATION_LABELS["hsv_s"])
    hsv_v = _augmentation("hsv_v", label=AUGMENTATION_LABELS["hsv_v"])
    scale = _augmentation("scale", label=AUGMENTATION_LABELS["scale"])
    degrees = _augmentation("degrees", label=AUGMENTATION_LABELS["degrees"])
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
        for name in ("epochs", "imgsz", "batch", "gpus", "patience"):
            self.fields[name].widget.attrs.setdefault("inputmode", "numeric")
        self.fields["lr0"].widget.attrs.update(step="any", inputmode="decimal")

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

    def hyperparameters(self) -> dict[str, Any]:
        """The hyperparameters for `job_create_training`; a blank one is its default."""
        data = self.cleaned_data
        return {
            "patience": data.get("patience"),
            "optimizer": data.get("optimizer") or None,
            "lr0": data.get("lr0"),
            "augmentations": {
                name: data[name] for name in AUGMENTATIONS if data.get(name) is not None
            },
        }

    def augmentation_fields(self) -> list[Any]:
        return [self[name] for name in AUGMENTATION_LABELS]

    def model_requested(self) -> str:
        """What the service takes: an architecture name or a model version's id."""
        model = self.cleaned_data["model"]
        return model.removeprefix(VERSION_PREFIX)
