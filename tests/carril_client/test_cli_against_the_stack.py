"""The installed `carril` command, run as a child process against the real stack (GPU
service on the simulated runtime, web app under gunicorn, reconciler): what a CI job or a
person at a terminal does."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.synthetic_dataset import dataset_zip
from tests.support.stack import Stack
from tests.support.webhook_receiver import Receiver
from tests.web.dataset_zips import with_label

pytestmark = pytest.mark.slow
CARRIL = Path(sys.executable).parent / "carril"
# The client of this checkout, whichever checkout the virtual environment was installed from.
ROOT = Path(__file__).resolve().parents[2]
TRAIN = ["--model", "yolov8n", "--epochs", "1", "--imgsz", "32", "--batch", "2", "--seeds", "1"]


class Cli:
    """`carril` with its own config folder, as one user of one stack."""

    def __init__(self, stack: Stack, home: Path) -> None:
        self.stack = stack
        self.config = home / "config"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CARRIL_")} | {
            "CARRIL_URL": stack.web_url,
            "CARRIL_CONFIG_DIR": str(self.config),
            "NO_COLOR": "1",
            "PYTHONPATH": str(ROOT),
        }

    def run(
        self, *args: str, env: dict[str, str] | None = None, stdin: str = "", timeout_s: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CARRIL), *args],
            env=self.env | (env or {}),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def json(self, *args: str, **kwargs: Any) -> Any:
        done = self.run(*args, "--json", **kwargs)
        assert done.returncode == 0, (done.stdout, done.stderr, self.stack.logs())
        return json.loads(done.stdout)

    def at_terminal(self, *args: str, timeout_s: float = 300) -> tuple[int, str]:
        """Run with stdout and stderr on a pseudo-terminal, as a person sees it."""
        leader, follower = pty.openpty()
        env = self.env | {"TERM": "xterm", "COLUMNS": "120"}
        env.pop("NO_COLOR")
        process = subprocess.Popen(
            [str(CARRIL), *args],
            stdout=follower,
            stderr=follower,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
        return process.wait(timeout=timeout_s), b"".join(chunks).decode(errors="replace")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = Stack(storage=tmp_path_factory.mktemp("cli") / "storage").start()
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def hook(stack) -> Any:
    """A webhook of ada's on a receiver on 127.0.0.1 (her allowance as an administrator),
    called by the stack's reconciler process."""
    receiver = Receiver()
    with stack.api("ada") as api:
        body = {
            "url": receiver.url,
            "events": ["job.finished", "model.stage_changed"],
            "allow_private": True,
        }
        created = api.post("/api/v1/webhooks/", json=body)
    assert created.status_code == 201, created.text
    receiver.secret = created.json()["secret"]
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def ada(stack, tmp_path_factory) -> Cli:
    """The administrator, signed in with `carril login`."""
    cli = Cli(stack, tmp_path_factory.mktemp("ada"))
    login = cli.run("login", "--username", "ada", "--password-stdin", stdin=stack.password + "\n")
    assert login.returncode == 0, login.stderr
    return cli


@pytest.fixture(scope="module")
def dataset(ada, tmp_path_factory) -> dict[str, Any]:
    path = dataset_zip(path=tmp_path_factory.mktemp("data") / "shapes.zip", images_per_split=2)
    return ada.json("datasets", "upload", str(path), "--name", "shapes")


@pytest.fixture(scope="module")
def trained(ada, dataset) -> dict[str, Any]:
    """`train --wait` at a terminal (the live bar), then the job it ran."""
    code, screen = ada.at_terminal("train", "--dataset", dataset["id"], *TRAIN, "--wait")
    assert code == 0, screen
    job = ada.json("jobs", "list", "--kind", "train")[0]
    job["screen"] = screen
    return job


def test_login_keeps_a_token_only_its_owner_can_read_and_the_commands_use_it(stack, tmp_path):
    cli = Cli(stack, tmp_path)
    wrong = cli.run("login", "--username", "alice", "--password-stdin", stdin="nope\n")
    assert wrong.returncode == 3, wrong.stderr
    done = cli.run("login", "--username", "alice", "--password-stdin", stdin=stack.password + "\n")
    assert done.returncode == 0, done.stderr
    config = cli.config / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(config.read_text())["token"]
    assert cli.json("datasets", "list") == []
    # CI passes a token in the environment instead; a bad one is exit 3.
    refused = cli.run("jobs", "list", env={"CARRIL_TOKEN": "not-a-token"})
    assert refused.returncode == 3
    assert "error:" in refused.stderr


def test_an_upload_shows_a_progress_bar_and_a_refused_one_prints_its_report_and_exits_1(
    ada, tmp_path
):
    good = dataset_zip(path=tmp_path / "good.zip", images_per_split=2)
    code, screen = ada.at_terminal("datasets", "upload", str(good), "--name", "bar")
    assert code == 0, screen
    assert "upload good.zip" in screen
    assert "━" in screen, "a progress bar was drawn"
    assert "ready" in screen

    bad = with_label(tmp_path / "bad.zip", "7 0.5 0.5 0.2 0.2")
    refused = ada.run("datasets", "upload", str(bad), "--name", "bad")
    assert refused.returncode == 1
    assert "labels/train/train_1.txt:2" in refused.stderr, refused.stderr
    assert "━" not in refused.stderr + refused.stdout, "no bars when not at a terminal"


def test_train_wait_follows_the_job_to_its_success(ada, trained):
    assert trained["state"] == "succeeded"
    assert trained["registered_model_version"]
    assert f"job {trained['id']}" in trained["screen"]
    assert "━" in trained["screen"], "a live bar was drawn"
    assert "seed 1/1" in trained["screen"]
    assert "epoch 1/1" in trained["screen"]
    assert trained["progress"]["fraction"] == pytest.approx(1.0)


def test_infer_writes_the_detections_and_the_annotated_images(ada, trained, tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    from tests.web.dataset_zips import png

    for name in ("a.png", "b.png"):
        (images / name).write_bytes(png(size=64))
    out = tmp_path / "out"
    version = trained["registered_model_version"]
    done = ada.json("infer", str(images), "--model", version, "--out", str(out), "--imgsz", "32")
    detections = json.loads((out / "detections.json").read_text())
    assert [image["name"] for image in detections["images"]] == ["a.png", "b.png"]
    assert sorted(p.name for p in (out / "annotated").iterdir()) == ["a.png", "b.png"]
    assert len(done["files"]) == 3


def test_evaluate_runs_an_evaluate_job_and_prints_its_per_class_table(ada, dataset, trained):
    version = trained["registered_model_version"]
    classes = ada.json("models", "show", version)["class_names"]

    evaluation = ada.json("evaluate", "--model", version, "--dataset", dataset["id"])
    table = ada.run("evaluate", "--model", version, "--dataset", dataset["id"], "--conf", "0.01")

    assert (evaluation["source"], evaluation["split"], evaluation["seed"]) == (
        "evaluate",
        "val",
        None,
    )
    assert evaluation["imgsz"] == 32  # the size the version was trained at
    assert [row["class_name"] for row in evaluation["per_class"]] == classes
    assert set(evaluation["metrics"]) == {"precision", "recall", "mAP50", "mAP50-95"}
    assert table.returncode == 0, table.stderr
    assert "mAP50-95" in table.stdout
    assert all(name in table.stdout for name in classes)


def test_a_scoped_ci_token_is_refused_outside_its_scope_with_exit_3(
    ada, dataset, trained, tmp_path
):
    made = ada.json("tokens", "create", "--name", "ci", "--scopes", "read,train,promote-gated")
    assert made["scopes"] == ["promote-gated", "read", "train"]
    ci = {"CARRIL_TOKEN": made["token"]}
    assert ada.json("datasets", "show", dataset["id"], env=ci)["id"] == dataset["id"]
    zipped = dataset_zip(path=tmp_path / "more.zip", images_per_split=2)
    refused = ada.run("datasets", "upload", str(zipped), "--name", "more", env=ci)
    assert refused.returncode == 3
    assert "SCOPE_REFUSED" in refused.stderr
    assert "`datasets`" in refused.stderr
    version = trained["registered_model_version"]
    retire = ada.run("models", "retire", version, "-r", "from ci", "--json", env=ci)
    assert retire.returncode == 3
    assert json.loads(retire.stdout)["error"]["details"]["scope"] == "models"


def test_ci_train_promotes_a_candidate_past_the_gate_and_refuses_one_short_of_it(
    ada, dataset, trained, hook
):
    serving = trained["registered_model_version"]
    ada.json("models", "promote", serving, "--reason", "the first one")

    # A margin every candidate meets: what is under test is the path (train, compare,
    # promote with the comparison as the reason), whatever the tiny training learned; a
    # one-epoch training learns nothing, so the did-not-learn override is given too.
    passed = ada.json(
        "ci-train", "--dataset", dataset["id"], *TRAIN, "--gate-metric", "mAP50-95",
        "--min-improvement", "-1", "--promote", "--allow-did-not-learn",
    )  # fmt: skip
    assert passed["outcome"] == "promoted", passed
    candidate = ada.json("models", "show", passed["candidate"]["version"])
    assert candidate["stage"] == "serving"
    reasons = [e["reason"] for e in candidate["events"] if e["to_stage"] == "serving"]
    assert reasons[-1].startswith("ci-train gate passed: mAP50-95"), reasons
    assert passed["candidate"]["source"].startswith("evaluate job ")  # the server has them

    # An improvement no model can make: refused, exit 1, nothing promoted.
    refused = ada.run(
        "ci-train", "--dataset", dataset["id"], *TRAIN, "--gate-metric", "mAP50-95",
        "--min-improvement", "1", "--promote",
    )  # fmt: skip
    assert refused.returncode == 1, refused.stderr
    assert "difference" in refused.stdout, "the comparison table"
    serving_now = ada.json("models", "list", "--stage", "serving")
    assert [v["id"] for v in serving_now] == [candidate["id"]]


def test_the_reconciler_told_the_webhook_of_the_job_ends_and_stage_changes_signed(hook, stack):
    import hashlib
    import hmac

    def events() -> list[str]:
        return [json.loads(body)["event"] for _, body in hook.calls]

    stack.wait_until(
        lambda: events().count("job.finished") >= 2 and "model.stage_changed" in events(),
        timeout_s=60,
        what="the webhook calls",
    )
    for headers, body in hook.calls:
        expected = "sha256=" + hmac.new(hook.secret.encode(), body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["X-Carril-Signature"], expected)


def test_ctrl_c_while_waiting_asks_and_cancels_the_job_when_told(ada, dataset, trained):
    import signal
    import time

    leader, follower = pty.openpty()
    env = ada.env | {"TERM": "xterm", "COLUMNS": "120"}
    longer = [*TRAIN, "--epochs", "30"]
    process = subprocess.Popen(
        [str(CARRIL), "train", "--dataset", dataset["id"], *longer, "--wait"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    screen = b""
    deadline = time.monotonic() + 120
    while b"running" not in screen and time.monotonic() < deadline:
        screen += os.read(leader, 65536)
    assert b"running" in screen, screen.decode(errors="replace")
    process.send_signal(signal.SIGINT)
    while b"Cancel it (c) or detach (d)?" not in screen and time.monotonic() < deadline:
        screen += os.read(leader, 65536)
    os.write(leader, b"c\n")
    assert process.wait(timeout=60) == 130
    os.close(leader)
    job = ada.json("jobs", "list", "--kind", "train")[0]
    assert job["id"] != trained["id"]
    assert job["state"] in {"cancelling", "cancelled"}


def test_models_export_and_download_write_the_files_whose_fingerprints_the_server_gives(
    ada, trained, tmp_path
):
    version = trained["registered_model_version"]
    export = ada.json("models", "export", version, "--format", "onnx", "--imgsz", "32")
    assert export["state"] == "succeeded", export

    weights = ada.json("models", "download", version, "--out", str(tmp_path / "best.pt"))
    onnx = ada.json(
        "models", "download", version, "--format", "onnx", "--out", str(tmp_path / "m.onnx")
    )

    shown = ada.json("models", "show", version)
    assert hashlib.sha256(Path(weights["path"]).read_bytes()).hexdigest() == shown["fingerprint"]
    with ada.stack.api("ada") as api:
        (listed,) = api.get(f"/api/v1/models/{version}/exports/").json()
    assert listed["format"] == "onnx"
    assert listed["parity_passed"], listed
    assert hashlib.sha256(Path(onnx["path"]).read_bytes()).hexdigest() == listed["fingerprint"]


def test_a_training_is_named_tagged_labelled_found_by_tag_and_compared(ada, dataset, trained):
    started = ada.json(
        "train", "--dataset", dataset["id"], *TRAIN, "--name", "mosaic off", "--tag", "cli",
        "--note", "no mosaic", "--mosaic", "0", "--patience", "0",
    )  # fmt: skip
    labelled = ada.json("jobs", "label", trained["id"], "--name", "base", "--tag", "cli")

    shown = ada.json("jobs", "show", started["id"])
    found = ada.json("jobs", "list", "--tag", "cli", "--dataset", dataset["id"])
    compared = ada.json("jobs", "compare", trained["id"], started["id"])
    table = ada.run("jobs", "compare", trained["id"], started["id"])
    ada.run("jobs", "cancel", started["id"])  # what is under test is the request, not its run

    assert (shown["name"], shown["tags"], shown["note"]) == ("mosaic off", ["cli"], "no mosaic")
    assert (shown["params"]["mosaic"], shown["params"]["patience"]) == (0, 0)
    assert (labelled["name"], labelled["tags"]) == ("base", ["cli"])
    assert {j["id"] for j in found} == {trained["id"], started["id"]}
    assert [run["title"] for run in compared["runs"]] == ["base", "mosaic off"]
    assert table.returncode == 0, table.stderr
    assert "mAP50-95" in table.stdout
