"""GPU accounting (issue 16): per attempt, GPUs x the wall time its lanes were held,
and the energy, measured where power is read and modelled where it is not."""

from __future__ import annotations

import dataclasses

import pytest

from gpu_service.accounting import EnergyMeter, attempt_usage
from gpu_service.errors import WorkerCrashed
from gpu_service.executors.base import AttemptEnded
from gpu_service.journal import JobState
from gpu_service.manager import Submission
from gpu_service.workloads.diagnostic.spec import DIAGNOSTIC


def test_an_attempts_gpu_time_is_its_gpus_times_the_time_it_held_its_lanes():
    usage = attempt_usage(
        attempt=1, gpus=2, held_from=100.0, held_until=190.0, measured_wh=None, modelled_watts=300
    )
    assert usage["gpu_seconds"] == 180.0
    # 300 W x 180 GPU-seconds = 15 Wh, and it says it was modelled.
    assert (usage["energy_wh"], usage["energy_source"]) == (15.0, "modelled")


def test_measured_energy_is_kept_and_labelled_measured():
    usage = attempt_usage(
        attempt=2, gpus=1, held_from=0.0, held_until=10.0, measured_wh=1.25, modelled_watts=300
    )
    assert (usage["energy_wh"], usage["energy_source"]) == (1.25, "measured")


def test_the_meter_integrates_power_and_shares_a_lane_among_its_holders():
    meter = EnergyMeter(measure=True, modelled_watts=300)
    holders = {0: ["a", "b"], 1: ["a"]}
    meter.sample(power_w={0: 200.0, 1: 100.0}, holders=holders, now=0.0)
    meter.sample(power_w={0: 200.0, 1: 100.0}, holders=holders, now=36.0)
    # 36 s = 0.01 h. GPU 0: 200 W x 0.01 h = 2 Wh split in two; GPU 1: 1 Wh to "a".
    assert meter.take("a") == pytest.approx(2.0)
    assert meter.take("b") == pytest.approx(1.0)
    assert meter.take("a") is None  # taken once, at the attempt's end


def test_the_meter_measures_nothing_on_a_runtime_without_power():
    meter = EnergyMeter(measure=False, modelled_watts=300)
    meter.sample(power_w={0: 200.0}, holders={0: ["a"]}, now=0.0)
    meter.sample(power_w={0: 200.0}, holders={0: ["a"]}, now=10.0)
    assert meter.take("a") is None
    assert not meter.due()


def test_a_finished_job_records_what_its_attempt_held(make, monkeypatch):
    scheduler = make(modelled_gpu_watts=100.0)
    monkeypatch.setattr(scheduler.manager.executor, "launch", lambda attempt: None)
    job, _ = scheduler.manager.submit(Submission(kind="diagnostic", gpus=2), request_id=None)
    scheduler.manager.on_event(AttemptEnded(job_id=job.id, attempt=1, state="succeeded", result={}))
    done = scheduler.manager.journal.job_get(job_id=job.id)
    assert done.state is JobState.SUCCEEDED
    [usage] = done.usage
    assert usage["gpus"] == 2
    assert usage["held_from"] == done.started_at
    assert usage["held_until"] == pytest.approx(done.finished_at, abs=0.5)
    held = usage["held_until"] - usage["held_from"]
    assert usage["gpu_seconds"] == pytest.approx(2 * held, abs=1e-5)
    assert usage["energy_wh"] == pytest.approx(100.0 * 2 * held / 3600, abs=1e-5)
    assert usage["energy_source"] == "modelled"
    assert usage["gpu_model"] == scheduler.manager.executor.inventory()[0].name


def test_each_attempt_of_a_resumed_job_is_recorded_once(make, monkeypatch):
    resumable = dataclasses.replace(DIAGNOSTIC, resumable=True)
    scheduler = make(kinds={"diagnostic": resumable}, max_attempts=2)
    monkeypatch.setattr(scheduler.manager.executor, "launch", lambda attempt: None)
    job, _ = scheduler.manager.submit(Submission(kind="diagnostic"), request_id=None)
    crashed = AttemptEnded(
        job_id=job.id, attempt=1, state="failed", error=WorkerCrashed(details={"exitcode": -9})
    )
    scheduler.manager.on_event(crashed)
    scheduler.manager.on_event(crashed)  # a stale repeat: fenced, not counted twice
    scheduler.manager.on_event(AttemptEnded(job_id=job.id, attempt=2, state="succeeded", result={}))
    done = scheduler.manager.journal.job_get(job_id=job.id)
    assert [u["attempt"] for u in done.usage] == [1, 2]
    assert all(u["gpus"] == 1 for u in done.usage)


def test_a_job_cancelled_while_queued_held_nothing(make):
    scheduler = make()
    scheduler.manager.admission.hold(job_id="busy", gpu_ids=[0, 1], memory_mib=0)
    job, _ = scheduler.manager.submit(Submission(kind="diagnostic"), request_id=None)
    assert scheduler.manager.cancel(job_id=job.id).usage == []


def test_the_status_record_carries_the_usage(make, monkeypatch):
    from gpu_service.api.present import job_public

    scheduler = make()
    monkeypatch.setattr(scheduler.manager.executor, "launch", lambda attempt: None)
    job, _ = scheduler.manager.submit(Submission(kind="diagnostic"), request_id=None)
    scheduler.manager.on_event(AttemptEnded(job_id=job.id, attempt=1, state="succeeded", result={}))
    public = job_public(scheduler.manager.journal.job_get(job_id=job.id)).model_dump(mode="json")
    [usage] = public["usage"]
    assert usage["energy_source"] == "modelled"
    assert usage["held_until"].endswith("Z")
