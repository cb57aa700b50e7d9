""" "Clone with changes": a finished job's spec as the initial values of its form.

Every spec key that names a form field fills it, so a field added to the training form
(a hyperparameter, say) is pre-filled as soon as the spec carries it; the dataset, the
model and the seeds are given in the form's own terms.
"""

from __future__ import annotations

from typing import Any

from ui.forms import VERSION_PREFIX

_OWN_TERMS = {"dataset", "model", "seeds"}


def training_initial(*, job: Any) -> dict[str, Any]:
    spec = job.spec or {}
    initial = {key: value for key, value in spec.items() if key not in _OWN_TERMS}
    initial["dataset"] = str(job.dataset_id) if job.dataset_id else ""
    # A fine-tune's spec names the base weights by fingerprint; the form, by version.
    if job.model_version_id:
        initial["model"] = VERSION_PREFIX + str(job.model_version_id)
    else:
        initial["model"] = spec.get("model", "")
    initial["seeds"] = ", ".join(str(seed) for seed in spec.get("seeds") or [])
    initial["gpus"] = job.gpus
    return initial


def inference_initial(*, job: Any) -> dict[str, Any]:
    """What the inference page can pre-fill; the images are chosen again."""
    spec = job.spec or {}
    return {
        "version": str(job.model_version_id) if job.model_version_id else "",
        "conf": spec.get("conf"),
        "iou": spec.get("iou"),
    }
