"""OpenAPI at /api/schema/, docs at /api/docs/ served from vendored files (no CDN)."""

from __future__ import annotations

import yaml
from carril_web.errors import CATALOGUE, JOB_ERROR_CODES

from tests.web.carril_web.test_web_settings import ROOT


def test_the_schema_describes_the_public_operations(owner_api):
    response = owner_api.get("/api/schema/")
    assert response.status_code == 200
    paths = yaml.safe_load(response.content)["paths"]
    for path in (
        "/api/v1/auth/token/",
        "/api/v1/datasets/",
        "/api/v1/models/import/",
        "/api/v1/jobs/train/",
        "/api/v1/jobs/infer/",
        "/api/v1/jobs/{job_id}/",
        "/api/v1/gpus/",
    ):
        assert path in paths


def test_the_docs_page_loads_its_scripts_from_this_server(owner_api):
    page = owner_api.get("/api/docs/").content.decode()
    assert "swagger-ui" in page
    assert "cdn" not in page.lower()
    assert "/static/drf_spectacular_sidecar/" in page


def test_docs_api_errors_lists_every_code_in_the_catalogue():
    text = (ROOT / "docs" / "api-errors.md").read_text()
    for code in [*CATALOGUE, *JOB_ERROR_CODES]:
        assert f"`{code}`" in text, code


def test_the_schema_generates_and_validates_without_warnings(tmp_path):
    from django.core.management import call_command

    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml")
    )
    schema = yaml.safe_load((tmp_path / "schema.yaml").read_text())
    assert "tokenAuth" in schema["components"]["securitySchemes"]
