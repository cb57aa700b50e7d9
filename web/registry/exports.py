"""Exports of model versions: register them from export jobs, list them, pick what a
download or an inference uses, and set a version's serving format (ADR 0029).

Artifacts live on shared storage (`exports/<fingerprint>/`), written by the GPU
service; the web records what each export job's result said and serves the files.
"""

from __future__ import annotations

import base64
import logging
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from accounts.services import user_is_administrator
from carril_web.errors import Forbidden, NotFound, ValidationFailed
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from registry.models import DOWNLOAD_FORMATS, SERVING_FORMATS, ModelExport, ModelVersion

if TYPE_CHECKING:
    from jobs.models import Job

    from gpu_service.contract import ExportResult

logger = logging.getLogger(__name__)

_SUFFIX = {"pt": ".pt", "onnx": ".onnx", "torchscript": ".torchscript", "engine": ".engine"}


def model_exports_list(*, version: ModelVersion) -> QuerySet[ModelExport]:
    return version.exports.all()


def model_export_register_from_job(*, job: Job) -> ModelExport | None:
    """Record a finished export job's artifact, once (idempotent on its fingerprint)."""
    result = cast("ExportResult", job.result or {})
    manifest = dict(result.get("export") or {})
    fingerprint = manifest.get("fingerprint")
    if not fingerprint or job.model_version_id is None:
        logger.warning("export job %s succeeded without an export in its result", job.id)
        return None
    existing = ModelExport.objects.filter(fingerprint=fingerprint).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return ModelExport.objects.create(
                model_version_id=job.model_version_id,
                fingerprint=fingerprint,
                format=manifest.get("format", ""),
                artifact=manifest.get("artifact", ""),
                manifest=manifest,
                parity_passed=bool((manifest.get("parity") or {}).get("passed")),
                job=job,
            )
    except IntegrityError:
        return ModelExport.objects.get(fingerprint=fingerprint)


def model_version_set_serving_format(
    *, actor: AbstractBaseUser, version: ModelVersion, fmt: str
) -> ModelVersion:
    """What inference on this version runs by default: `pt`, or a format with an
    export that passed parity (one that failed can never serve)."""
    if not user_is_administrator(user=actor):
        raise Forbidden("Only administrators set a version's serving format.")
    if fmt not in SERVING_FORMATS:
        raise ValidationFailed(
            f"Serving format must be one of {', '.join(SERVING_FORMATS)}.",
            details={"fields": {"format": ["Not a serving format."]}},
        )
    if fmt != "pt" and not version.exports.filter(format=fmt, parity_passed=True).exists():
        raise ValidationFailed(
            f"This version has no {fmt} export that passed its parity check.",
            details={"fields": {"format": ["No passing export in this format."]}},
        )
    version.serving_format = fmt
    version.save(update_fields=["serving_format"])
    return version


@dataclass(frozen=True)
class Download:
    path: Path  # a file to send (a zip built for a folder artifact)
    filename: str
    fingerprint: str  # sha256 of the file, or of the folder's listing (ADR 0029)
    digest_of_bytes: bool  # True when `fingerprint` is the sha256 of the bytes sent
    temporary: bool  # remove `path` once sent


def download_filename(*, version: ModelVersion, fmt: str) -> str:
    """Model name, version (its fingerprint's start) and format, safe on any disk."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", version.name).strip("._") or "model"
    suffix = ".zip" if fmt == "openvino" else _SUFFIX[fmt]
    return f"{stem[:80]}-{version.fingerprint[:12]}-{fmt}{suffix}"


def model_version_download(*, version: ModelVersion, fmt: str) -> Download:
    """The file a download of this version in `fmt` sends: the weights, or the newest
    export in that format (one that passed parity if there is one)."""
    if fmt not in DOWNLOAD_FORMATS:
        raise ValidationFailed(
            f"Format must be one of {', '.join(DOWNLOAD_FORMATS)}.",
            details={"fields": {"format": ["Unknown format."]}},
        )
    storage = Path(settings.CARRIL_STORAGE)
    filename = download_filename(version=version, fmt=fmt)
    if fmt == "pt":
        path = storage / "weights" / f"{version.fingerprint}.pt"
        if not path.is_file():
            raise NotFound("This version's weights file is not in storage.")
        return Download(path, filename, version.fingerprint, True, False)
    export = version.exports.filter(format=fmt).order_by("-parity_passed", "-created_at").first()
    if export is None:
        raise NotFound(f"This version has no {fmt} export; export it first.")
    artifact = (storage / export.artifact).resolve()
    if not artifact.is_relative_to(storage.resolve()) or not artifact.exists():
        raise NotFound(f"The {fmt} export's files are not in storage.")
    if artifact.is_file():
        return Download(artifact, filename, export.fingerprint, True, False)
    return Download(_zip_folder(artifact), filename, export.fingerprint, False, True)


def _zip_folder(folder: Path) -> Path:
    handle: IO[bytes] = tempfile.NamedTemporaryFile(suffix=".zip", delete=False)  # noqa: SIM115
    with handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as zf:
        for item in sorted(folder.rglob("*")):
            if item.is_file():
                zf.write(item, arcname=f"{folder.name}/{item.relative_to(folder).as_posix()}")
    return Path(handle.name)


def repr_digest(hex_sha256: str) -> str:
    """RFC 9530 `Repr-Digest` value for a sha256 given in hex."""
    return f"sha-256=:{base64.b64encode(bytes.fromhex(hex_sha256)).decode()}:"


def manifest_public(*, export: ModelExport) -> dict[str, object]:
    """The manifest as users see it: storage-relative paths only (never absolute)."""
    manifest = dict(export.manifest or {})
    artifact = str(manifest.get("artifact", ""))
    if artifact.startswith("/"):
        manifest["artifact"] = Path(artifact).name
    return manifest
