"""Fixtures of the web app's tests against the real GPU service."""

from __future__ import annotations

from typing import Any

import pytest
from datasets.services import dataset_create_from_upload
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.e2e.synthetic_dataset import dataset_zip
from tests.support.gpu_service import free_port

TOKEN = "test-token-0123456789"


@pytest.fixture
def gpu_url(settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Where the web app looks for the GPU service; nothing listens there until started."""
    url = f"http://127.0.0.1:{free_port()}"
    settings.CARRIL_GPU_SERVICE_URL = url
    settings.CARRIL_GPU_SERVICE_TIMEOUT_S = 10.0
    monkeypatch.setenv("CARRIL_GPU_SERVICE_TOKEN", TOKEN)
    return url


@pytest.fixture
def dataset(owner: Any, tmp_path: Any) -> Any:
    data = dataset_zip(path=tmp_path / "shapes.zip", images_per_split=2, size=64).read_bytes()
    return dataset_create_from_upload(
        owner=owner, name="shapes", upload=SimpleUploadedFile("shapes.zip", data)
    )
