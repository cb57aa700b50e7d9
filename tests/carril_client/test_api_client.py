"""The client against an in-process transport: the error envelope becomes typed
exceptions, uploads stream with progress, waiting polls until the state changes."""

from __future__ import annotations

import json

import httpx
import pytest

from carril_client import Client, DatasetInvalid, GateFailed, JobFailed, QuotaExceeded
from carril_client.errors import AuthRefused, Unreachable


def envelope(status: int, code: str, **details) -> httpx.Response:
    body = {"error": {"code": code, "message": f"{code} happened", "details": details}}
    return httpx.Response(status, json=body)


def client_of(handler) -> Client:
    return Client("http://carril.test", token="t", transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (409, "GATE_FAILED", GateFailed),
        (429, "QUOTA_EXCEEDED", QuotaExceeded),
        (401, "X", AuthRefused),
    ],
)
def test_an_error_envelope_becomes_the_exception_of_its_code(status, code, kind):
    answer = envelope(status, code, candidate=0.1)
    with client_of(lambda request: answer) as carril, pytest.raises(kind) as raised:
        carril.model_stage("v", stage="serving", reason="r")
    assert raised.value.code == code
    assert raised.value.status == status
    assert raised.value.details == {"candidate": 0.1}


def test_a_server_that_does_not_answer_is_unreachable():
    def refuse(request):
        raise httpx.ConnectError("refused", request=request)

    with client_of(refuse) as carril, pytest.raises(Unreachable):
        carril.gpus()


def test_an_upload_streams_the_file_and_reports_progress_up_to_its_size(tmp_path):
    path = tmp_path / "data.zip"
    path.write_bytes(b"z" * 300_000)
    seen = []
    received = {}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            received["body"] = request.read()
            received["length"] = request.headers.get("Content-Length")
            return httpx.Response(202, json={"id": "d1", "state": "validating"})
        return httpx.Response(200, json={"id": "d1", "state": "ready", "name": "n"})

    with client_of(handler) as carril:
        dataset = carril.dataset_upload(path, name="n", progress=lambda s, t: seen.append((s, t)))
    assert dataset["state"] == "ready"
    assert seen[-1] == (300_000, 300_000)
    assert len(seen) > 1, "reported as it went, not once at the end"
    assert b"z" * 300_000 in received["body"]
    assert int(received["length"]) == len(received["body"])


def test_a_dataset_found_invalid_after_validation_raises_with_its_report(tmp_path):
    path = tmp_path / "data.zip"
    path.write_bytes(b"zip")
    report = {"problems": [{"file": "labels/train/a.txt", "line": 3, "code": "bad_class"}]}
    states = iter(["validating", "invalid"])

    def handler(request):
        if request.method == "POST":
            return httpx.Response(202, json={"id": "d1", "state": "validating"})
        return httpx.Response(200, json={"id": "d1", "state": next(states), "report": report})

    with client_of(handler) as carril, pytest.raises(DatasetInvalid) as raised:
        carril.dataset_upload(path, name="n")
    assert raised.value.details["report"] == report


def test_waiting_for_a_job_that_fails_raises_job_failed_with_its_code(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    states = iter(["queued", "running", "failed"])

    def handler(request):
        state = next(states)
        error = {"code": "CUDA_OOM", "message": "out of memory"} if state == "failed" else None
        return httpx.Response(200, json={"id": "j", "state": state, "error": error})

    with client_of(handler) as carril, pytest.raises(JobFailed) as raised:
        carril.job_wait("j")
    assert raised.value.code == "CUDA_OOM"


def test_a_list_is_read_page_after_page():
    def handler(request):
        page = request.url.params.get("page", "1")
        nxt = "http://carril.test/api/v1/models/?page=2" if page == "1" else None
        body = {"count": 2, "next": nxt, "previous": None, "results": [{"id": page}]}
        return httpx.Response(200, content=json.dumps(body))

    with client_of(handler) as carril:
        assert [v["id"] for v in carril.models_list()] == ["1", "2"]


def test_evaluate_and_export_call_the_paths_issues_13_and_14_document(tmp_path):
    seen = []

    def handler(request):
        seen.append((request.method, request.url.path, request.url.query.decode()))
        if request.url.path.endswith("/download/"):
            return httpx.Response(200, content=b"w" * 70_000, headers={"Content-Length": "70000"})
        return httpx.Response(202, json={"id": "j", "state": "submitted", "url": "/x"})

    progress = []
    with client_of(handler) as carril:
        carril.evaluate(model_version="v", dataset="d")
        carril.model_export("v", format="onnx", imgsz=None)
        path = carril.model_download("v", tmp_path / "v.onnx", format="onnx",
                                     progress=lambda s, t: progress.append((s, t)))  # fmt: skip
    assert seen[:2] == [
        ("POST", "/api/v1/jobs/evaluate/", ""),
        ("POST", "/api/v1/models/v/export/", ""),
    ]
    assert seen[2] == ("GET", "/api/v1/models/v/download/", "format=onnx")
    assert path.read_bytes() == b"w" * 70_000
    assert progress[-1] == (70_000, 70_000)
    assert not (tmp_path / "v.onnx.part").exists()


def test_labels_filters_and_comparisons_are_sent_as_issue_13s_api_takes_them():
    seen = []

    def handler(request):
        body = json.loads(request.content) if request.content else None
        seen.append((request.method, request.url.path, dict(request.url.params), body))
        if request.url.path.endswith("/compare/"):
            return httpx.Response(200, json={"base": "a", "runs": [], "final_metrics": []})
        if request.method == "GET":
            nxt = None if "cursor" in request.url.params else "/api/v1/jobs/?cursor=c2"
            return httpx.Response(200, json={"next": nxt, "previous": None, "results": [{}]})
        return httpx.Response(200, json={"id": "j", **(body or {})})

    with client_of(handler) as carril:
        labelled = carril.job_label("j", tags=("a", "b"), note="")
        carril.job_label("j", name="n")
        jobs = carril.jobs_list(tag="a", dataset="d", sort="-mAP50-95")
        compared = carril.jobs_compare(["a", "b", "c"])
        carril.train(dataset="d", model="yolov8n", name="n", tags=["a"], optimizer="SGD", degrees=5)

    assert labelled == {"id": "j", "tags": ["a", "b"], "note": ""}
    assert seen[:2] == [
        ("PATCH", "/api/v1/jobs/j/", {}, {"tags": ["a", "b"], "note": ""}),
        ("PATCH", "/api/v1/jobs/j/", {}, {"name": "n"}),
    ]
    filters = {"tag": "a", "dataset": "d", "sort": "-mAP50-95", "page_size": "200"}
    assert seen[2] == ("GET", "/api/v1/jobs/", filters, None)
    assert seen[3][2] == {"cursor": "c2"}  # the next link carries the query, keyset
    assert len(jobs) == 2
    assert seen[4][1:3] == ("/api/v1/jobs/compare/", {"ids": "a,b,c"})
    assert compared["base"] == "a"
    assert seen[5][3] == {
        "dataset": "d",
        "model": "yolov8n",
        "name": "n",
        "tags": ["a"],
        "optimizer": "SGD",
        "degrees": 5,
    }
