"""The Ray executor's attempt bookkeeping, without a cluster: what an attempt's actor
keeps (ray_node.AttemptRunner) and what the executor lets through (fencing)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest

from gpu_service.errors import WorkerCrashed
from gpu_service.executors.base import Attempt, AttemptEnded, EpochReported
from gpu_service.executors.ray import RayExecutor, _Running
from gpu_service.executors.ray_node import AttemptRunner
from gpu_service.executors.ray_spares import SpareWorkers
from gpu_service.settings import load_settings


@pytest.fixture(autouse=True)
def _keep_this_process_output(monkeypatch):
    # In an actor the job's output goes to its log file; here it would take pytest's.
    monkeypatch.setattr("gpu_service.workers.child._redirect_output", lambda **_: None)


def _runner(tmp_path, **spec: Any) -> AttemptRunner:
    return AttemptRunner(
        order={"job_id": "j", "kind": "diagnostic", "spec": spec, "attempt": 1},
        boot={
            "style": "fresh",
            "gpu_ids": [0],
            "env": {},
            "storage": str(tmp_path),
            "runtime": "simulated",
            "parent_pid": 0,
        },
    )


def _until_ended(runner: AttemptRunner) -> None:
    deadline = time.monotonic() + 30
    while not runner.poll(-1)["ended"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_an_attempt_keeps_its_messages_until_acknowledged_and_a_new_service_resumes_there(
    tmp_path,
):
    runner = _runner(tmp_path, seconds=0.3, step_s=0.1)
    runner.start()
    _until_ended(runner)

    first = runner.poll(0)
    assert first["messages"][-1]["t"] == "done"
    assert first["ended"]
    assert {m["job_id"] for m in first["messages"]} == {"j"}
    assert first["attempt"] == 1
    runner.poll(3)  # the service wrote the first three and asks for the rest
    # A restarted service does not know its cursor: it gets what was not acknowledged.
    again = runner.poll(-1)
    assert again["messages"] == first["messages"][3:]
    assert again["seq"] == first["seq"]


def test_a_cancelled_attempt_stops_between_steps(tmp_path):
    runner = _runner(tmp_path, seconds=30, step_s=0.1)
    runner.start()
    runner.cancel()
    _until_ended(runner)
    final = runner.poll(0)["messages"][-1]
    assert final["t"] == "done"
    assert final["result"]["stopped"] is True


@pytest.fixture
def executor(tmp_path):
    settings = load_settings(
        storage=tmp_path, gpu_service_token="t" * 32, executor="ray", ray_address="127.0.0.1:1"
    )
    executor = RayExecutor(settings=settings)
    events: list[Any] = []
    executor._sink = events.append
    executor.events = events  # type: ignore[attr-defined]
    return executor


def _running(executor: RayExecutor, *, attempt: int) -> _Running:
    running = _Running(
        attempt=Attempt(job_id="j", attempt=attempt, kind="train", spec={}, gpu_ids=[0]),
        actor=None,
        host="node-0",
        started=True,
    )
    executor._running["j"] = running
    return running


def test_what_another_attempt_says_is_never_reported(executor):
    running = _running(executor, attempt=2)
    stale = {
        "job_id": "j",
        "attempt": 1,
        "seq": 2,
        "ended": True,
        "messages": [
            {"job_id": "j", "t": "epoch", "record": {"epoch": 9}},
            {"job_id": "j", "t": "done", "result": {"weights": "stale"}},
        ],
    }
    executor._deliver("j", running, stale)
    assert executor.events == []
    assert executor._running["j"] is running  # attempt 2 is still followed


def test_the_current_attempt_is_reported_tagged_with_its_number(executor):
    running = _running(executor, attempt=2)
    answer = {
        "job_id": "j",
        "attempt": 2,
        "seq": 2,
        "ended": True,
        "messages": [
            {"job_id": "j", "t": "epoch", "record": {"epoch": 3}},
            {"job_id": "j", "t": "done", "result": {"ok": True}},
        ],
    }
    executor._deliver("j", running, answer)
    epochs = [e for e in executor.events if isinstance(e, EpochReported)]
    ended = [e for e in executor.events if isinstance(e, AttemptEnded)]
    assert [(e.attempt, e.record) for e in epochs] == [(2, {"epoch": 3})]
    assert [(e.attempt, e.state, e.result) for e in ended] == [(2, "succeeded", {"ok": True})]
    assert "j" not in executor._running


def test_an_actor_lost_with_its_node_ends_the_attempt_as_a_crash_of_a_lost_node(executor):
    running = _running(executor, attempt=1)
    running.placement = {"host": "node-0", "node_id": "n0"}
    executor._alive_nodes = lambda: [{"NodeID": "n1", "Labels": {}}]  # n0 is gone
    executor._crashed("j", running, RuntimeError("The node died"))
    (ended,) = executor.events
    assert ended.state == "failed"
    assert isinstance(ended.error, WorkerCrashed)
    assert ended.error.details["host"] == "node-0"
    assert ended.error.details["node_lost"] is True


def test_a_poll_with_nothing_new_waits_for_the_next_message_instead_of_answering_empty(
    tmp_path,
):
    runner = _runner(tmp_path, seconds=30, step_s=0.1)
    seq = runner.poll(0)["seq"]  # nothing sent yet: the job has not started
    assert seq == 0
    threading.Timer(0.3, runner.start).start()

    asked = time.monotonic()
    answer = runner.poll(seq, 10.0)
    waited = time.monotonic() - asked

    assert answer["messages"], "the poll came back empty"
    assert 0.2 < waited < 10.0  # it came back with the job's first message, not the timeout
    runner.cancel()
    _until_ended(runner)


def test_a_poll_with_nothing_new_comes_back_empty_after_its_wait(tmp_path):
    runner = _runner(tmp_path, seconds=30, step_s=0.1)
    asked = time.monotonic()
    answer = runner.poll(0, 0.2)
    assert answer["messages"] == []
    assert time.monotonic() - asked >= 0.2


def test_a_spare_worker_that_cannot_be_asked_for_leaves_the_attempt_to_start_cold(caplog):
    spares = SpareWorkers(job_id="01000000")
    # A raylet port where nothing listens: the call fails, nothing is raised.
    node = {"NodeID": "ab" * 28, "NodeManagerAddress": "127.0.0.1", "NodeManagerPort": 9}
    for _ in range(2):
        call = spares.replace(node)
        with contextlib.suppress(Exception):
            call.result(timeout=10)
    deadline = time.monotonic() + 10
    while "no spare Ray worker" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.05)
    assert caplog.text.count("no spare Ray worker") == 1  # logged once per node
