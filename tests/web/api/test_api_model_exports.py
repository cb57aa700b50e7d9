"""Downloads and exports of model versions over the API (issue 14)."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

from registry.exports import model_export_register_from_job
from registry.models import ModelExport

from tests.web.factories import model_version


def store_weights(storage: Path, content: bytes = b"weights-bytes") -> str:
    fingerprint = hashlib.sha256(content).hexdigest()
    (storage / "weights").mkdir(parents=True, exist_ok=True)
    (storage / "weights" / f"{fingerprint}.pt").write_bytes(content)
    return fingerprint


def store_export(
    storage: Path, version, *, fmt: str = "onnx", passed: bool = True, content: bytes = b"onnx"
) -> ModelExport:
    fingerprint = hashlib.sha256(content + fmt.encode()).hexdigest()
    folder = storage / "exports" / fingerprint
    if fmt == "openvino":
        artifact = folder / "model_openvino_model"
        artifact.mkdir(parents=True)
        (artifact / "model.xml").write_bytes(b"<xml/>")
        (artifact / "model.bin").write_bytes(content)
    else:
        folder.mkdir(parents=True)
        artifact = folder / f"model.{fmt}"
        artifact.write_bytes(content)
    return ModelExport.objects.create(
        model_version=version,
        fingerprint=fingerprint,
        format=fmt,
        artifact=artifact.relative_to(storage).as_posix(),
        manifest={
            "fingerprint": fingerprint,
            "format": fmt,
            "artifact": artifact.relative_to(storage).as_posix(),
            "source_fingerprint": version.fingerprint,
            "opset": 19 if fmt == "onnx" else None,
            "parity": {"passed": passed, "matched_fraction": 1.0 if passed else 0.5},
        },
        parity_passed=passed,
    )


def test_anyone_who_sees_a_version_downloads_its_weights_with_the_fingerprint(owner_api, storage):
    fingerprint = store_weights(storage)
    version = model_version(fingerprint=fingerprint)
    version.name = "shapes v1"
    version.save()

    response = owner_api.get(f"/api/v1/models/{version.id}/download/")

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"weights-bytes"
    assert response["X-Carril-Fingerprint"] == fingerprint
    digest = base64.b64encode(hashlib.sha256(b"weights-bytes").digest()).decode()
    assert response["Repr-Digest"] == f"sha-256=:{digest}:"
    assert f'filename="shapes_v1-{fingerprint[:12]}-pt.pt"' in response["Content-Disposition"]


def test_signed_out_visitors_cannot_download(anon_api, storage, db):
    version = model_version(fingerprint=store_weights(storage))

    assert anon_api.get(f"/api/v1/models/{version.id}/download/").status_code == 401


def test_an_onnx_export_downloads_under_a_name_that_says_model_version_and_format(
    owner_api, storage
):
    version = model_version(fingerprint=store_weights(storage))
    export = store_export(storage, version, content=b"onnx-bytes")

    response = owner_api.get(f"/api/v1/models/{version.id}/download/?format=onnx")

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"onnx-bytes"
    assert response["X-Carril-Fingerprint"] == export.fingerprint
    assert f"-{version.fingerprint[:12]}-onnx.onnx" in response["Content-Disposition"]


def test_an_openvino_export_downloads_as_a_zip_of_its_folder(owner_api, storage):
    version = model_version(fingerprint=store_weights(storage))
    export = store_export(storage, version, fmt="openvino", content=b"bin-bytes")

    response = owner_api.get(f"/api/v1/models/{version.id}/download/?format=openvino")

    assert response.status_code == 200
    assert response["X-Carril-Fingerprint"] == export.fingerprint
    assert "Repr-Digest" not in response  # the fingerprint is of the folder, not the zip
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
        assert sorted(zf.namelist()) == [
            "model_openvino_model/model.bin",
            "model_openvino_model/model.xml",
        ]
    assert "-openvino.zip" in response["Content-Disposition"]


def test_a_format_without_an_export_or_unknown_is_a_clear_error(owner_api, storage):
    version = model_version(fingerprint=store_weights(storage))

    missing = owner_api.get(f"/api/v1/models/{version.id}/download/?format=onnx")
    unknown = owner_api.get(f"/api/v1/models/{version.id}/download/?format=tflite")

    assert missing.status_code == 404
    assert "no onnx export" in missing.json()["error"]["message"]
    assert unknown.status_code == 400


def test_exports_are_listed_with_storage_relative_manifests(owner_api, storage):
    version = model_version(fingerprint=store_weights(storage))
    export = store_export(storage, version)

    body = owner_api.get(f"/api/v1/models/{version.id}/exports/").json()

    assert [e["fingerprint"] for e in body] == [export.fingerprint]
    listed = body[0]
    assert listed["parity_passed"] is True
    assert listed["manifest"]["opset"] == 19
    assert listed["manifest"]["artifact"].startswith("exports/")
    assert str(storage) not in str(body)
    assert listed["download_url"] == f"/api/v1/models/{version.id}/download/?format=onnx"


def test_only_an_export_that_passed_parity_can_become_the_serving_format(
    admin_api, owner_api, storage
):
    version = model_version(fingerprint=store_weights(storage))
    store_export(storage, version, fmt="onnx", passed=False)
    url = f"/api/v1/models/{version.id}/serving-format/"

    refused = admin_api.post(url, {"format": "onnx"}, format="json")
    store_export(storage, version, fmt="openvino", passed=True)
    accepted = admin_api.post(url, {"format": "openvino"}, format="json")
    not_admin = owner_api.post(url, {"format": "pt"}, format="json")

    assert refused.status_code == 400
    assert "passed its parity check" in refused.json()["error"]["message"]
    assert accepted.status_code == 200
    assert accepted.json()["serving_format"] == "openvino"
    assert not_admin.status_code == 403


def test_an_export_jobs_result_is_registered_once(storage, owner):
    from jobs.models import Job

    version = model_version(fingerprint=store_weights(storage))
    manifest = {
        "fingerprint": "e" * 64,
        "format": "onnx",
        "artifact": f"exports/{'e' * 64}/model.onnx",
        "parity": {"passed": True},
    }
    job = Job.objects.create(
        owner=owner,
        kind="export",
        model_version=version,
        state="succeeded",
        result={"export": manifest, "manifest_path": f"exports/{'e' * 64}/manifest.json"},
    )

    first = model_export_register_from_job(job=job)
    again = model_export_register_from_job(job=job)

    assert first == again
    assert first.parity_passed is True
    assert ModelExport.objects.count() == 1
