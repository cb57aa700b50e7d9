"""Every response of the web app carries a Content-Security-Policy that runs scripts and
style sheets from this server only, and no inline script or handler; the templates have
none to keep. HSTS goes out in production on requests that came over HTTPS, never over
plain HTTP and never in dev (ADR 0058)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from tests.web.carril_web.test_web_settings import KEY, ROOT, TOKEN, start
from tests.web.factories import dataset_for

TEMPLATES = sorted((ROOT / "web").glob("*/templates/**/*.html"))


def policy(response) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy", "")
    directives = [part.split() for part in header.split(";") if part.strip()]
    return {name: values for name, *values in directives}


def assert_strict(response) -> None:
    rules = policy(response)
    assert rules, f"no Content-Security-Policy on {response.request['PATH_INFO']}"
    assert rules["default-src"] == ["'self'"]
    assert rules["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval'
    assert "'unsafe-inline'" not in rules["style-src"]
    assert rules["object-src"] == ["'none'"]
    assert rules["base-uri"] == ["'none'"]
    assert rules["frame-ancestors"] == ["'none'"]


@pytest.mark.parametrize(
    "path",
    ["/login/", "/", "/datasets/", "/train/", "/jobs/", "/models/", "/api/v1/jobs/",
     "/api/v1/nothing-here/", "/no-such-page/", "/healthz", "/static/ui/css/carril.css",
     "/admin/login/"],
)  # fmt: skip
def test_every_kind_of_response_carries_the_strict_content_security_policy(
    client: Client, owner, path: str
):
    client.force_login(owner)
    assert_strict(client.get(path))


def test_a_page_of_a_record_carries_the_policy_too(client: Client, owner):
    client.force_login(owner)
    dataset = dataset_for(owner)
    response = client.get(f"/datasets/{dataset.id}/")
    assert response.status_code == 200
    assert_strict(response)
    assert 'data-confirm="Delete this dataset and its files?"' in response.content.decode()


def test_the_api_docs_page_loads_its_start_up_script_as_a_file(client: Client, owner):
    client.force_login(owner)
    response = client.get("/api/docs/")
    page = response.content.decode()
    rules = policy(response)
    assert rules["script-src"] == ["'self'"]
    assert re.findall(r"<script(?![^>]*\bsrc=)", page) == []
    # Swagger UI's template keeps a <style> block: allowed on this page alone.
    assert "'unsafe-inline'" in rules["style-src"]
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200
    assert "SwaggerUIBundle" in script.content.decode()


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_template_has_an_inline_script_handler_or_style_element(template: Path):
    text = template.read_text(encoding="utf-8")
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", text) == []
    assert re.findall(r"\son[a-z]+\s*=", text) == []
    assert re.findall(r"javascript:", text, flags=re.IGNORECASE) == []
    assert "<style" not in text


def test_the_server_error_page_renders_and_takes_its_style_from_a_file():
    from django.template.loader import render_to_string

    page = render_to_string("500.html")
    assert '<link rel="stylesheet" href="/static/ui/css/error.css">' in page
    assert (ROOT / "web/ui/static/ui/css/error.css").is_file()


HSTS = (
    "import django; django.setup(); from django.test import Client; c = Client(); "
    "print([c.get('/healthz', HTTP_X_FORWARDED_PROTO=p).headers.get("
    "'Strict-Transport-Security') for p in ('https', 'http')])"
)


def test_production_sends_hsts_over_https_only(tmp_path):
    result = start(
        tmp_path,
        code=HSTS,
        CARRIL_ENV="production",
        CARRIL_SECRET_KEY=KEY,
        CARRIL_GPU_SERVICE_TOKEN=TOKEN,
        CARRIL_ALLOWED_HOSTS="testserver",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "['max-age=31536000', None]"


def test_dev_sends_no_hsts_even_over_https(tmp_path):
    result = start(tmp_path, code=HSTS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[None, None]"


def test_hsts_can_be_set_shorter_while_a_deployment_tries_https(tmp_path):
    result = start(
        tmp_path,
        code=HSTS,
        CARRIL_ENV="production",
        CARRIL_SECRET_KEY=KEY,
        CARRIL_GPU_SERVICE_TOKEN=TOKEN,
        CARRIL_ALLOWED_HOSTS="testserver",
        CARRIL_HSTS_SECONDS="300",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "['max-age=300', None]"
