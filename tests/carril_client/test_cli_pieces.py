"""Pieces of the command that need no server (following a log, the gate's rule, seeds), and
the training request `train` and `ci-train` share, against a small real HTTP server."""

from __future__ import annotations

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
    recording the training requests it was sent."""
    import json
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

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            sent.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
            self._answer(202, {"id": f"job-{len(sent)}", "state": "submitted", "url": "/x"})

        def do_GET(self) -> None:
            job_id = self.path.rstrip("/").rsplit("/", 1)[-1]
            self._answer(200, {"id": job_id, "state": "failed", "error": {"code": "X"}})

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", sent
    server.shutdown()
    server.server_close()


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
