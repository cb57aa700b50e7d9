"""Exports on a model version's page: listed with parity, downloadable, and the
serving format offered only from exports that passed parity (issue 14)."""

from __future__ import annotations

from pathlib import Path

from django.test import Client
from django.urls import reverse
from jobs.models import Job
from registry.models import ModelVersion

from tests.web.api.test_api_model_exports import store_export


def test_the_page_lists_exports_with_parity_and_downloads_them(
    owner_client: Client, finished_training: Job, storage: Path
) -> None:
    version = ModelVersion.objects.get(source_job=finished_training)
    good = store_export(storage, version, fmt="onnx", passed=True, content=b"onnx-bytes")
    store_export(storage, version, fmt="openvino", passed=False)
    page = reverse("ui:model_version", kwargs={"version_id": version.id})

    html = owner_client.get(page).content.decode()

    assert html.count('data-testid="export-row"') == 2
    assert "passed" in html
    assert "failed" in html
    assert "0.500 matched" in html
    assert 'data-testid="serving-format-form"' not in html  # not an administrator
    download = owner_client.get(
        reverse("ui:model_download", kwargs={"version_id": version.id}) + "?format=onnx"
    )
    assert b"".join(download.streaming_content) == b"onnx-bytes"
    assert download["X-Carril-Fingerprint"] == good.fingerprint


def test_an_administrator_is_offered_only_formats_that_passed_parity(
    admin_client: Client, finished_training: Job, storage: Path
) -> None:
    version = ModelVersion.objects.get(source_job=finished_training)
    store_export(storage, version, fmt="onnx", passed=True)
    store_export(storage, version, fmt="openvino", passed=False)
    page = reverse("ui:model_version", kwargs={"version_id": version.id})

    html = admin_client.get(page).content.decode()
    form = html.split('data-testid="serving-format-form"')[1].split("</form>")[0]
    assert '<option value="onnx"' in form
    assert '<option value="openvino"' not in form

    admin_client.post(
        reverse("ui:model_serving_format", kwargs={"version_id": version.id}),
        {"format": "openvino"},
    )
    version.refresh_from_db()
    assert version.serving_format == "pt"
    admin_client.post(
        reverse("ui:model_serving_format", kwargs={"version_id": version.id}), {"format": "onnx"}
    )
    version.refresh_from_db()
    assert version.serving_format == "onnx"
