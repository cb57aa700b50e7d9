"""The GPU service's routes that name files or records by path answer 404 (a path in a
URL) or 422 (a path in a body) for NUL bytes and other odd bytes: never a 500, and the
service stays up. The web app's own routes are fuzzed in tests/security/test_web_*."""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest

from gpu_service.errors import CATALOGUE
from tests.support.gpu_service import GpuServiceProcess

# Odd bytes and encodings in one path segment: NUL raw and encoded, a lone surrogate's
# bytes (not UTF-8), an overlong UTF-8 slash, control bytes, encoded traversal, a
# backslash climb, and a name too long for the file system.
ODD_SEGMENTS = [
    "%00",
    "a%00b",
    "%00..%2f..%2fetc%2fpasswd",
    "%ed%b3%bf",
    "%c0%af",
    "%ff%fe",
    "%01%02%1b",
    "%2e%2e%2f%2e%2e%2fjournal.sqlite3",
    "..%5c..%5cjournal.sqlite3",
    "a" * 5000,
    "%e2%80%ae",
]

ODD_BODY_PATHS = [
    "a\x00b",
    "\x00",
    "weights/\x00/../x.pt",
    "\udcff.pt",
    "a" * 5000,
    "\x1b[31mred.pt",
]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    service = GpuServiceProcess(storage=tmp_path_factory.mktemp("storage"), gpus="1x24GiB")
    yield service.start()
    service.stop()


@pytest.mark.parametrize("segment", ODD_SEGMENTS)
@pytest.mark.parametrize("route", ["/v1/jobs/{}", "/v1/jobs/{}/logs", "/v1/weights/{}"])
def test_an_odd_byte_in_a_gpu_service_path_answers_404_never_500(
    service: GpuServiceProcess, route: str, segment: str
) -> None:
    response = service.client.get(route.format(segment))

    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] in CATALOGUE
    assert service.client.get("/healthz").status_code == 200


@pytest.mark.parametrize("path", ODD_BODY_PATHS, ids=lambda p: ascii(p)[:20])
def test_an_odd_byte_in_a_path_the_gpu_service_is_sent_is_refused_with_422_never_500(
    service: GpuServiceProcess, path: str
) -> None:
    sent = [
        _post_json(service, "/v1/weights", {"path": path}),
        _post_json(service, "/v1/media/probe", {"path": path}),
        _post_json(
            service, "/v1/jobs", {"kind": "infer", "spec": {"model": "a" * 64, "images": [path]}}
        ),
        _post_json(service, "/v1/jobs", {"kind": "train", "spec": {"dataset": path, "epochs": 1}}),
    ]

    for response in sent:
        assert response.status_code in (404, 422), response.text
        assert response.json()["error"]["code"] in CATALOGUE
    assert service.client.get("/v1/jobs").json()["jobs"] == []
    assert "Traceback" not in service.log_tail(400)


def _post_json(service: GpuServiceProcess, url: str, body: dict[str, object]) -> httpx.Response:
    # json.dumps escapes a lone surrogate as \\udcff, which is valid JSON; httpx's own
    # encoder would refuse to send it.
    return service.client.post(
        url, content=json.dumps(body), headers={"Content-Type": "application/json"}
    )


def test_an_encoded_nul_in_a_query_answers_422_never_500(service: GpuServiceProcess) -> None:
    response = service.client.get(f"/v1/jobs?kind={quote(chr(0))}&state=%00")

    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] in CATALOGUE
