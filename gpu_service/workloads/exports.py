"""The store of exported models: where an export lives, its fingerprint and its manifest.

An export is an artifact of a model version, kept beside the weights store:
`storage/exports/<fingerprint>/` holds the artifact (`model.onnx`, `model.torchscript`,
`model.engine`, or the OpenVINO folder `model_openvino_model/`) and `manifest.json`.
The fingerprint is the sha256 of the artifact's bytes; for a folder it is the sha256 of
its sorted listing of `relative-name NUL sha256-of-file` lines, so it names the content
whatever the file system says about times. Paths in manifests are relative to storage:
they are shown to users and must not reveal where the server keeps its files.

No torch here: the API process reads manifests at submit time.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from gpu_service import errors
from gpu_service.contract import FINGERPRINT

EXPORT_FORMATS = ("onnx", "openvino", "torchscript", "engine")
# Formats an inference job can be served from (what the resident workers load).
SERVING_FORMATS = ("onnx", "openvino")
_CHUNK = 1024 * 1024


def exports_dir(*, storage: Path) -> Path:
    return Path(storage) / "exports"


def export_dir(*, fingerprint: str, storage: Path) -> Path:
    if not FINGERPRINT.match(fingerprint or ""):
        raise errors.ValidationFailed(
            "export must be the sha256 fingerprint of an export (64 hex digits)",
            details={"field": "export"},
        )
    return exports_dir(storage=storage) / fingerprint


def fingerprint_artifact(*, path: Path) -> str:
    """sha256 of a file's bytes, or of a folder's sorted `name NUL sha256` listing."""
    if path.is_file():
        return _file_sha256(path)
    lines = [
        f"{item.relative_to(path).as_posix()}\0{_file_sha256(item)}\n"
        for item in sorted(path.rglob("*"))
        if item.is_file()
    ]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(*, fingerprint: str, storage: Path) -> dict[str, Any]:
    """The manifest of a stored export, or NotFound."""
    path = export_dir(fingerprint=fingerprint, storage=storage) / "manifest.json"
    if not path.is_file():
        raise errors.NotFound(
            f"no export with fingerprint {fingerprint}",
            details={"field": "export", "fingerprint": fingerprint},
        )
    return json.loads(path.read_text())


def list_manifests(*, source: str, storage: Path) -> list[dict[str, Any]]:
    """Every export of one model version (by its weights' fingerprint), newest first."""
    found = []
    for path in exports_dir(storage=storage).glob("*/manifest.json"):
        manifest = json.loads(path.read_text())
        if manifest.get("source_fingerprint") == source:
            found.append(manifest)
    return sorted(found, key=lambda m: m.get("created_at", ""), reverse=True)


def serving_export(
    *, source: str, fmt: str, storage: Path, fingerprint: str | None = None
) -> dict[str, Any]:
    """The export an inference job runs on: the one named, else the newest of `fmt`
    that passed parity. Refuses exports of other models, other formats or failed parity."""
    if fingerprint is not None:
        manifest = read_manifest(fingerprint=fingerprint, storage=storage)
        if manifest["source_fingerprint"] != source or manifest["format"] != fmt:
            raise errors.ValidationFailed(
                f"export {fingerprint} is not a {fmt} export of model {source}",
                details={"field": "export"},
            )
    else:
        candidates = [m for m in list_manifests(source=source, storage=storage)]
        candidates = [m for m in candidates if m["format"] == fmt and _passed(m)]
        if not candidates:
            raise errors.NotFound(
                f"model {source} has no {fmt} export that passed its parity check; export it first",
                details={"field": "format", "format": fmt},
            )
        manifest = candidates[0]
    if not _passed(manifest):
        raise errors.ValidationFailed(
            f"export {manifest['fingerprint']} failed its parity check and cannot serve",
            details={"field": "export", "parity": manifest.get("parity")},
        )
    return manifest


def _passed(manifest: dict[str, Any]) -> bool:
    return bool((manifest.get("parity") or {}).get("passed"))


def artifact_path(*, manifest: dict[str, Any], storage: Path) -> Path:
    """The artifact's absolute path on this machine, from its storage-relative one."""
    return Path(storage) / manifest["artifact"]


def verified_artifact(*, fingerprint: str, storage: Path) -> tuple[Path, dict[str, Any]]:
    """The artifact and manifest of an export, refused if its bytes changed."""
    manifest = read_manifest(fingerprint=fingerprint, storage=storage)
    path = artifact_path(manifest=manifest, storage=storage)
    if not path.exists() or fingerprint_artifact(path=path) != fingerprint:
        raise errors.WeightsRejected(
            "the stored export no longer matches its fingerprint; refusing to load it",
            details={"export": fingerprint},
        )
    return path, manifest
