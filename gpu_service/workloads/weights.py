"""The fingerprinted weights store: import, describe and load `.pt` files safely.

A checkpoint is a pickle, and unpickling runs code. So a file is only ever opened with
`torch.load(weights_only=True)` against ultralytics' allow-list of model classes
(`torch_safe_load(safe_only=True)`); anything else it references is refused before it
can run. Stored weights live at `storage/weights/<sha256>.pt` and are loaded by that
fingerprint only, with the hash checked again on every load.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from gpu_service import errors
from gpu_service.contract import FINGERPRINT
from gpu_service.storage import write_json_atomically
from gpu_service.workloads.offline import make_ultralytics_silent

_CHUNK = 1024 * 1024


def weights_dir(*, storage: Path) -> Path:
    return Path(storage) / "weights"


def stored_path(*, fingerprint: str, storage: Path) -> Path:
    """Where weights with this fingerprint live; refuses anything that is not a sha256."""
    if not FINGERPRINT.match(fingerprint or ""):
        raise errors.ValidationFailed(
            "model must be the sha256 fingerprint of registered weights (64 hex digits)",
            details={"field": "model"},
        )
    return weights_dir(storage=storage) / f"{fingerprint}.pt"


def fingerprint_file(*, path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def import_weights(*, src: Path, storage: Path) -> dict[str, Any]:
    """Fingerprint, safely read and store a `.pt` file; returns `WeightsPublic` fields."""
    src = Path(src)
    if not src.is_file():
        raise errors.FileMissing(f"weights file not found: {src}", details={"path": str(src)})
    fingerprint = fingerprint_file(path=src)
    # Read the bytes we hashed: copy first, then open only the copy.
    store = weights_dir(storage=storage)
    store.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=store, prefix=".import-", suffix=".pt")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        shutil.copyfile(src, tmp)
        if fingerprint_file(path=tmp) != fingerprint:
            raise errors.WeightsRejected("the weights file changed while it was being imported")
        description = describe_checkpoint(path=tmp)
        description.update(fingerprint=fingerprint, size_bytes=tmp.stat().st_size)
        final = store / f"{fingerprint}.pt"
        write_json_atomically(store / f"{fingerprint}.json", description, sort_keys=True)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return description


def describe_weights(*, fingerprint: str, storage: Path) -> dict[str, Any]:
    """`WeightsPublic` fields of stored weights, from the sidecar written at import."""
    path = verified_path(fingerprint=fingerprint, storage=storage, verify_hash=False)
    sidecar = path.with_suffix(".json")
    if sidecar.is_file():
        return json.loads(sidecar.read_text())
    description = describe_checkpoint(path=path)
    description.update(fingerprint=fingerprint, size_bytes=path.stat().st_size)
    return description


def verified_path(*, fingerprint: str, storage: Path, verify_hash: bool = True) -> Path:
    """The stored file for a fingerprint, refused if missing or if its bytes changed."""
    path = stored_path(fingerprint=fingerprint, storage=storage)
    if not path.is_file():
        raise errors.NotFound(
            f"no registered weights with fingerprint {fingerprint}",
            details={"field": "model", "fingerprint": fingerprint},
        )
    if verify_hash and fingerprint_file(path=path) != fingerprint:
        raise errors.WeightsRejected(
            "stored weights no longer match their fingerprint; refusing to load them",
            details={"fingerprint": fingerprint},
        )
    return path


def load_model(*, fingerprint: str, storage: Path) -> Any:
    """An ultralytics `YOLO` for stored weights, loaded by fingerprint only."""
    path = verified_path(fingerprint=fingerprint, storage=storage)
    read_checkpoint(path=path)  # refuses unsafe content before ultralytics sees the file
    from ultralytics import YOLO

    make_ultralytics_silent(storage=storage)
    return YOLO(str(path), task="detect")


def read_checkpoint(*, path: Path) -> dict[str, Any]:
    """Unpickle a checkpoint with the restricted loader, or raise WeightsRejected."""
    from ultralytics.nn.tasks import torch_safe_load

    try:
        ckpt, _ = torch_safe_load(str(path), safe_only=True)
    except Exception as exc:  # every failure to read safely means the same thing: refuse
        raise errors.WeightsRejected(
            f"not a safe, loadable ultralytics checkpoint: {_first_line(exc)}",
            details={"reason": type(exc).__name__},
        ) from exc
    import torch

    model = ckpt.get("ema") or ckpt.get("model")
    if not isinstance(model, torch.nn.Module):
        raise errors.WeightsRejected(
            "the checkpoint holds no model", details={"reason": "no_model"}
        )
    return ckpt


def describe_checkpoint(*, path: Path) -> dict[str, Any]:
    """Task, architecture, class names and image size of a checkpoint, read safely."""
    ckpt = read_checkpoint(path=path)
    model = ckpt.get("ema") or ckpt.get("model")
    task = getattr(model, "task", None)
    if task is None:
        from ultralytics.nn.tasks import guess_model_task

        task = guess_model_task(model)
    names = getattr(model, "names", None) or {}
    if isinstance(names, dict):
        class_names = [str(names[k]) for k in sorted(names)]
    else:
        class_names = [str(n) for n in names]
    train_args = ckpt.get("train_args") or {}
    args = getattr(model, "args", None) or {}
    imgsz = train_args.get("imgsz", args.get("imgsz") if isinstance(args, dict) else None)
    return {
        "task": str(task),
        "architecture": _architecture(model),
        "class_names": class_names,
        "imgsz": int(imgsz) if isinstance(imgsz, int) else None,
    }


def _architecture(model: Any) -> str | None:
    """`yolov8n` for a model built from `yolov8n.yaml` (ultralytics keeps the scaled name)."""
    cfg = getattr(model, "yaml", None) or {}
    return Path(str(cfg.get("yaml_file", ""))).stem or None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
