"""The registry of job kinds this service can admit.

`diagnostic` is always there. `train` and `infer` live in gpu_service.workloads and are
imported lazily and guarded: the service (and its tests) run before those modules exist,
and a broken workload module must not take the API down with it. Kind modules must not
import torch at import time: the API process imports them.
"""

from __future__ import annotations

import importlib
import logging

from gpu_service.errors import ValidationFailed
from gpu_service.workloads.base import Kind
from gpu_service.workloads.diagnostic import DIAGNOSTIC

log = logging.getLogger(__name__)

_WORKLOADS = {
    "train": ("gpu_service.workloads.train", "TRAIN"),
    "infer": ("gpu_service.workloads.infer", "INFER"),
}


def _import(name: str) -> Kind | None:
    module_name, attribute = _WORKLOADS[name]
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            log.exception("kind %s cannot be imported", name)
        return None
    except Exception:
        log.exception("kind %s cannot be imported", name)
        return None


def kinds_load() -> dict[str, Kind]:
    kinds = {"diagnostic": DIAGNOSTIC}
    for name in _WORKLOADS:
        kind = _import(name)
        if kind is not None:
            kinds[name] = kind
    log.info("job kinds available: %s", ", ".join(sorted(kinds)))
    return kinds


def kind_get(name: str) -> Kind:
    """One kind, importing only its own module (what a worker process needs)."""
    kind = DIAGNOSTIC if name == "diagnostic" else _import(name) if name in _WORKLOADS else None
    if kind is None:
        raise ValidationFailed(f"job kind {name!r} is not available on this service")
    return kind
