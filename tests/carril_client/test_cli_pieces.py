"""Pieces of the command that need no server (following a log, the gate's rule, seeds), and
the training request `train` and `ci-train` share, against a small real HTTP server."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
import typer

from carril_client.cli.ci import Numbers, gate_passes
from carril_client.cli.jobs import _after
from carril_client.cli.training import seeds_parse


def test_following_a_log_prints_only_the_lines_after_the_last_ones_seen():
    assert _after(["a", "b", "c"], ["b", "c", "d", "e"]) == ["d", "e"]
    assert _after(["a", "b"], ["a", "b"]) == []
    assert _after([], ["x"]) == ["x"]
    # Repeated lines: the last place the seen end appears counts.
    assert _after(["x", "y"], ["x", "y", "z", "x", "y", "w"]) == ["w"]


def numbers(value):
    return Numbers(version="v", source="s", metrics={"mAP50-95": value})


@pytest.mark.parametrize(
    ("candidate", "serving", "margin", "passes"),
    [
        (0.5, 0.48, 0.01, True),
        (0.5, 0.495, 0.01, False),
        (0.1, None, 0.5, True),
        (0.0, None, 0, False),
    ],
)
def test_the_gate_wants_the_margin_over_serving_or_anything_learned_when_nothing_serves(
    candidate, serving, margin, passes
):
    theirs = numbers(serving) if serving is not None else None
    assert gate_passes("mAP50-95", numbers(candidate), theirs, margin) is passes


def test_seeds_are_integers_separated_by_commas():
    assert seeds_parse("1, 2,3") == [1, 2, 3]
    with pytest.raises(typer.BadParameter):
        seeds_parse("one")


@pytest.fixture
def recording_server():
    """A real HTTP server that accepts any training (202) and reports every job failed,
    answers job lists and comparisons with one small document each, and records every
    request it was sent but the jobs' polls: method, path with its query, JSON body."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    sent: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            request = {"method": self.command, "path": self.path, "body": body}
            sent.append(request)
            return request

        def do_POST(self) -> None:
            self._record()
            self._answer(202, {"id": f"job-{len(sent)}", "state": "submitted", "url": "/x"})

        def do_PATCH(self) -> None:
            request = self._record()
            job_id = self.path.rstrip("/").rsplit("/", 1)[-1]
            self._answer(200, {**JOB, "id": job_id, **request["body"]})

        def do_GET(self) -> None:
            if self.path.startswith("/api/v1/jobs/compare/"):
                self._record()
                return self._answer(200, COMPARISON)
            if self.path.startswith("/api/v1/jobs/?"):
                self._record()
                return self._answer(200, {"next": None, "previous": None, "results": [JOB]})
            job_id = self.path.rstrip("/").rsplit("/", 1)[-1]
            self._answer(200, {"id": job_id, "state": "failed", "error": {"code": "X"}})

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", sent
    server.shutdown()
    server.server_close()


JOB = {
    "id": "j1",
    "kind": "train",
    "state": "succeeded",
    "name": "baseline",
    "tags": ["small", "night"],
    "note": "",
    "created_at": "2026-11-30T22:00:00Z",
}
COMPARISON = {
    "base": "a1",
    "runs": [
        {"id": "a1", "title": "baseline", "state": "succeeded"},
        {"id": "b2", "title": "mosaic-off", "state": "succeeded"},
    ],
    "final_metrics": [
        {"metric": "mAP50-95", "values": [0.5, 0.625], "differences": [0.0, 0.125]},
        {"metric": "recall", "values": [0.75, None], "differences": [0.0, None]},
    ],
    "per_class": [],
}


def test_train_and_ci_train_send_the_same_training_request(recording_server, monkeypatch):
    from typer.testing import CliRunner

    from carril_client.cli.app import app

    url, sent = recording_server
    monkeypatch.setenv("CARRIL_URL", url)
    monkeypatch.setenv("CARRIL_TOKEN", "t")
    options = ["-d", "ds1", "-m", "yolov8n", "--epochs", "3", "--seeds", "1,2"]
    options += ["--gpus", "2", "--imgsz", "320", "--batch", "4"]
    runner = CliRunner()

    trained = runner.invoke(app, ["train", *options, "--json"])
    gated = runner.invoke(app, ["ci-train", *options, "--json"])
    refused = [
        runner.invoke(app, [cmd, "-d", "d", "-m", "m", "--seeds", "one"])
        for cmd in ("train", "ci-train")
    ]

    assert trained.exit_code == 0, trained.output
    assert gated.exit_code == 1, gated.output  # its training failed: exit 1
    assert [request["path"] for request in sent] == ["/api/v1/jobs/train/"] * 2
    assert [request["method"] for request in sent] == ["POST"] * 2
    assert (
        sent[0]["body"]
        == sent[1]["body"]
        == {
            "dataset": "ds1",
            "model": "yolov8n",
            "epochs": 3,
            "imgsz": 320,
            "batch": 4,
            "seeds": [1, 2],
            "gpus": 2,
        }
    )
    assert [result.exit_code for result in refused] == [2, 2]  # usage; nothing was sent
    assert len(sent) == 2


def test_names_tags_notes_and_hyperparameters_are_sent_only_when_given(
    recording_server, monkeypatch
):
    from typer.testing import CliRunner

    from carril_client.cli.app import app

    url, sent = recording_server
    monkeypatch.setenv("CARRIL_URL", url)
    monkeypatch.setenv("CARRIL_TOKEN", "t")
    options = ["-d", "ds1", "-m", "yolov8n", "--name", "mosaic off", "--tag", "small"]
    options += ["--tag", "night", "--note", "why not", "--patience", "0", "--optimizer"]
    options += ["AdamW", "--lr0", "0.002", "--mosaic", "0", "--fliplr", "0.25", "--hsv-h"]
    options += ["0.01", "--hsv-s", "0.5", "--hsv-v", "0.3", "--scale", "0.2", "--degrees", "10"]
    runner = CliRunner()

    plain = runner.invoke(app, ["train", "-d", "ds1", "-m", "yolov8n", "--json"])
    trained = runner.invoke(app, ["train", *options, "--json"])
    gated = runner.invoke(app, ["ci-train", *options, "--json"])

    assert plain.exit_code == 0, plain.output
    assert trained.exit_code == 0, trained.output
    assert gated.exit_code == 1, gated.output  # its training failed
    assert sent[0]["body"] == {"dataset": "ds1", "model": "yolov8n"}  # server defaults apply
    assert (
        sent[1]["body"]
        == sent[2]["body"]
        == {
            "dataset": "ds1",
            "model": "yolov8n",
            "name": "mosaic off",
            "tags": ["small", "night"],
            "note": "why not",
            "patience": 0,
            "optimizer": "AdamW",
            "lr0": 0.002,
            "mosaic": 0.0,
            "fliplr": 0.25,
            "hsv_h": 0.01,
            "hsv_s": 0.5,
            "hsv_v": 0.3,
            "scale": 0.2,
            "degrees": 10.0,
        }
    )


def test_labelling_a_job_patches_only_what_was_given(recording_server, monkeypatch):
    from typer.testing import CliRunner

    from carril_client.cli.app import app

    url, sent = recording_server
    monkeypatch.setenv("CARRIL_URL", url)
    monkeypatch.setenv("CARRIL_TOKEN", "t")
    runner = CliRunner()

    renamed = runner.invoke(app, ["jobs", "label", "j1", "--name", "best so far"])
    retagged = runner.invoke(app, ["jobs", "label", "j1", "--tag", "a", "--tag", "b", "--json"])
    cleared = runner.invoke(app, ["jobs", "label", "j1", "--clear-tags", "--note", ""])
    nothing = runner.invoke(app, ["jobs", "label", "j1"])
    both = runner.invoke(app, ["jobs", "label", "j1", "--tag", "a", "--clear-tags"])

    assert [r.exit_code for r in (renamed, retagged, cleared)] == [0, 0, 0], renamed.output
    assert "best so far" in renamed.output
    assert json.loads(retagged.output)["tags"] == ["a", "b"]
    assert [(r["method"], r["path"], r["body"]) for r in sent] == [
        ("PATCH", "/api/v1/jobs/j1/", {"name": "best so far"}),
        ("PATCH", "/api/v1/jobs/j1/", {"tags": ["a", "b"]}),
        ("PATCH", "/api/v1/jobs/j1/", {"tags": [], "note": ""}),
    ]
    assert [nothing.exit_code, both.exit_code] == [2, 2]  # usage; nothing more was sent


def test_listing_jobs_sends_the_tag_dataset_and_sort_and_shows_names_and_tags(
    recording_server, monkeypatch
):
    from typer.testing import CliRunner

    from carril_client.cli.app import app

    url, sent = recording_server
    monkeypatch.setenv("CARRIL_URL", url)
    monkeypatch.setenv("CARRIL_TOKEN", "t")
    options = ["--tag", "small", "--dataset", "ds1", "--sort", "-mAP50-95"]

    listed = CliRunner().invoke(app, ["jobs", "list", *options])

    assert listed.exit_code == 0, listed.output
    assert "baseline" in listed.output
    assert "small,night" in listed.output
    query = parse_qs(urlsplit(sent[0]["path"]).query)
    assert query == {
        "tag": ["small"],
        "dataset": ["ds1"],
        "sort": ["-mAP50-95"],
        "page_size": ["200"],
    }


def test_comparing_prints_final_metrics_side_by_side_with_differences_from_the_first(
    recording_server, monkeypatch
):
    from typer.testing import CliRunner

    from carril_client.cli.app import app

    url, sent = recording_server
    monkeypatch.setenv("CARRIL_URL", url)
    monkeypatch.setenv("CARRIL_TOKEN", "t")
    runner = CliRunner()

    table = runner.invoke(app, ["jobs", "compare", "a1", "b2"])
    document = runner.invoke(app, ["jobs", "compare", "a1", "b2", "--json"])

    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    header = next(line for line in lines if "baseline" in line and "mosaic-off" in line)
    assert header.index("baseline") < header.index("mosaic-off")
    assert any("mAP50-95" in x and "0.5000" in x and "0.6250 (+0.1250)" in x for x in lines)
    assert any("recall" in x and "0.7500" in x and x.rstrip().endswith("-") for x in lines)
    assert json.loads(document.output) == COMPARISON
    assert parse_qs(urlsplit(sent[0]["path"]).query) == {"ids": ["a1,b2"]}


def test_a_refusal_for_misplaced_labels_prints_the_files_and_the_expected_layout(capsys):
    from carril_client.cli.datasets import report_print
    from carril_client.cli.output import Output

    report = {
        "problems_total": 1,
        "problems": [
            {
                "code": "labels_misplaced",
                "message": "22 label files named like an image but not where...",
                "file": None,
                "line": None,
                "details": {
                    "files": ["annotations/train/a.txt", "annotations/train/b.txt"],
                    "files_total": 22,
                    "expected_layout": "dataset.zip\n└── labels/",
                },
            }
        ],
    }
    report_print(report, Output())
    err = capsys.readouterr().err
    assert "(archive): labels_misplaced: 22 label files" in err
    assert "      annotations/train/b.txt\n      ... and 20 more" in err
    assert "expected layout:\n      dataset.zip\n      └── labels/" in err


def test_a_dataset_is_printed_with_its_warnings(capsys):
    from carril_client.cli.datasets import dataset_print
    from carril_client.cli.output import Output

    dataset = {
        "id": "d1",
        "name": "shapes",
        "classes": ["a"],
        "splits": {"train": {"images": 4, "labels": 1, "instances": 1}},
        "report": {"warnings": [{"code": "mostly_background", "message": "3 of 4 train"}]},
    }
    dataset_print(dataset, Output())
    assert "warning: mostly_background: 3 of 4 train" in capsys.readouterr().out
