"""OpenAPI at /api/schema/, docs at /api/docs/ served from vendored files (no CDN)."""

from __future__ import annotations

import base64

import pytest
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


def documented_api_errors() -> dict[str, list[tuple[int, str]]]:
    """The page's table of API answers: code -> [(HTTP status, when)], one per row."""
    text = (ROOT / "docs" / "api-errors.md").read_text()
    table = text.split("| code | HTTP | when | details |", 1)[1].split("\n\n", 1)[0]
    rows: dict[str, list[tuple[int, str]]] = {}
    for line in table.strip().splitlines()[1:]:
        code, status, when, _details = (cell.strip() for cell in line.strip("|").split(" | "))
        rows.setdefault(code.strip("`"), []).append((int(status), when))
    return rows


def test_each_api_error_code_has_one_row_with_the_status_the_catalogue_answers():
    rows = documented_api_errors()
    assert set(rows) == set(CATALOGUE)
    for code, (status, _message) in CATALOGUE.items():
        assert [row_status for row_status, _when in rows[code]] == [status], code


def _as_documented(response, *, code: str, case: str) -> None:
    """The answer has the code, and the status the catalogue page lists for that code in
    the row that names this case."""
    [(status, when)] = documented_api_errors()[code]
    assert case in when, (code, when)
    assert response.status_code == status, response.content[:300]
    assert response.json()["error"]["code"] == code


@pytest.mark.parametrize(
    ("sort", "cursor"),
    [
        ("", "not-a-cursor"),
        ("", base64.b64encode(b"p=yesterday").decode()),  # decodes; its position is no time
        ("-mAP50", "not-a-cursor"),
        ("-mAP50", base64.urlsafe_b64encode(b'{"v": "x", "id": 1}').decode()),
    ],
)
def test_a_cursor_the_job_list_never_gave_out_answers_as_the_catalogue_says(
    owner_api, sort, cursor
):
    response = owner_api.get("/api/v1/jobs/", {"cursor": cursor, "sort": sort})

    _as_documented(response, code="VALIDATION_ERROR", case="`cursor` on the job list")
    assert response.json()["error"]["details"]["fields"]["cursor"]


def test_a_body_of_a_content_type_the_operation_does_not_take_answers_as_the_catalogue_says(
    owner_api,
):
    response = owner_api.post("/api/v1/jobs/infer/", {"conf": 0.5}, format="json")

    _as_documented(response, code="UNSUPPORTED_MEDIA_TYPE", case="`Content-Type`")
    assert response.json()["error"]["details"] == {"accepted": ["multipart/form-data"]}
    assert "multipart/form-data" in response.json()["error"]["message"]


def test_an_accept_header_the_api_cannot_answer_answers_as_the_catalogue_says(owner_api):
    response = owner_api.get("/api/v1/jobs/", HTTP_ACCEPT="text/html")

    _as_documented(response, code="NOT_ACCEPTABLE", case="`Accept`")


def test_the_schema_generates_and_validates_without_warnings(tmp_path):
    from django.core.management import call_command

    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml")
    )
    schema = yaml.safe_load((tmp_path / "schema.yaml").read_text())
    assert "tokenAuth" in schema["components"]["securitySchemes"]
