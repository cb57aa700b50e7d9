"""Integration: the real service (uvicorn subprocess), real spawned workers, simulated GPUs."""

from __future__ import annotations

import os
import signal

import httpx
import psutil
import pytest
from pydantic import TypeAdapter

from gpu_service.contract import PROGRESS_KEYS, JobStatus
from tests.support.gpu_service import GpuServiceProcess


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    service = GpuServiceProcess(
        storage=tmp_path_factory.mktemp("storage"),
        gpus="2x24GiB",
        env={"CARRIL_CANCEL_GRACE_S": "1"},
    ).start()
    yield service
    service.stop()


def quick(seconds: float = 0.3, **extra):
    return {"kind": "diagnostic", "spec": {"seconds": seconds, "step_s": 0.1}, **extra}


def test_a_submitted_job_is_accepted_then_runs_to_success(service):
    response = service.client.post("/v1/jobs", json=quick(0.5))
    assert response.status_code == 202
    accepted = response.json()
    assert accepted["status_url"] == f"/v1/jobs/{accepted['id']}"
    job = service.wait_for(accepted["id"])
    assert job["state"] == "succeeded"
    assert job["progress"]["fraction"] == 1.0
    assert job["result"]["steps_done"] == 5
    assert job["attempt"] == 1
    assert len(job["gpu_ids"]) == 1
    assert job["started_at"] is not None
    assert job["finished_at"] >= job["started_at"]


def test_a_job_record_is_the_contracts_job_status_document(service):
    job = service.wait_for(service.submit(**quick(0.1))["id"])
    TypeAdapter(JobStatus).validate_python(job)
    assert set(job) == set(JobStatus.__annotations__)
    assert set(job["progress"]) == set(PROGRESS_KEYS)


def test_resubmitting_with_the_same_job_id_returns_the_same_job(service):
    first = service.client.post("/v1/jobs", json=quick(job_id="same-key"))
    again = service.client.post("/v1/jobs", json=quick(5.0, job_id="same-key"))
    assert first.status_code == 202
    assert again.status_code == 200
    assert first.json()["id"] == again.json()["id"] == "same-key"
    assert service.wait_for("same-key")["spec"]["seconds"] == 0.3


def test_a_given_job_id_names_the_record_the_folder_and_the_log_lines(service):
    job_id = "2f1c9a7e-5b6d-4c3e-9f00-0123456789ab"
    accepted = service.submit(**quick(0.1, job_id=job_id))
    assert accepted["id"] == job_id
    assert service.wait_for(job_id)["state"] == "succeeded"
    assert (service.storage / "jobs" / job_id / "job.log").is_file()
    assert service.client.get(f"/v1/jobs/{job_id}/logs").json()["lines"]
    assert f"[job {job_id}]" in service.log_path.read_text()


def test_the_request_id_is_echoed_and_stored_on_the_job(service):
    response = service.client.post(
        "/v1/jobs", json=quick(0.1), headers={"X-Request-ID": "trace-abc-123"}
    )
    assert response.headers["x-request-id"] == "trace-abc-123"
    assert service.wait_for(response.json()["id"])["request_id"] == "trace-abc-123"
    made = httpx.get(f"{service.url}/healthz")
    assert len(made.headers["x-request-id"]) >= 16


def test_a_two_gpu_job_holds_both_lanes_and_waits_for_them(service):
    single = service.submit(**quick(1.5, gpu_ids=[0]))
    service.wait_for(single["id"], states={"running"})
    both = service.submit(**quick(0.2, gpus=2))
    assert service.job(both["id"])["state"] == "queued"
    queue = service.client.get("/v1/gpus").json()["queue"]
    assert [q["id"] for q in queue] == [both["id"]]
    done = service.wait_for(both["id"])
    assert done["state"] == "succeeded"
    assert done["gpu_ids"] == [0, 1]
    assert done["started_at"] >= service.job(single["id"])["finished_at"]


def test_cancelling_a_queued_job_is_immediate(service):
    blocker = service.submit(**quick(10.0, gpus=2))
    service.wait_for(blocker["id"], states={"running"})
    queued = service.submit(**quick(0.1))
    response = service.client.post(f"/v1/jobs/{queued['id']}/cancel")
    assert response.status_code == 200
    assert response.json()["state"] == "cancelled"
    assert response.json()["error"]["code"] == "CANCELLED"
    service.client.post(f"/v1/jobs/{blocker['id']}/cancel")
    assert service.wait_for(blocker["id"])["state"] == "cancelled"


def test_cancelling_a_running_job_stops_it_and_frees_its_lane(service):
    job = service.submit(**quick(30.0, gpu_ids=[1]))
    # Once it reports its pid the kind is running and polls the stop flag.
    service.wait_until(lambda: service.job(job["id"])["metrics"].get("worker_pid"))
    assert service.client.post(f"/v1/jobs/{job['id']}/cancel").json()["state"] in (
        "cancelling",
        "cancelled",
    )
    cancelled = service.wait_for(job["id"], timeout_s=30)
    assert cancelled["state"] == "cancelled"
    assert cancelled["result"]["stopped"] is True
    after = service.submit(**quick(0.1, gpu_ids=[1]))
    assert service.wait_for(after["id"])["state"] == "succeeded"


def test_a_job_that_ignores_the_stop_flag_is_killed_after_the_grace_period(service):
    # A 30 s step never checks the stop flag in time: SIGTERM after 1 s grace ends it.
    job = service.submit(kind="diagnostic", spec={"seconds": 60, "step_s": 30}, gpu_ids=[1])
    service.wait_for(job["id"], states={"running"})
    pid = service.wait_until(lambda: service.job(job["id"])["metrics"].get("worker_pid"))
    # Not cooperating: make the worker ignore the flag by stopping it from reading it.
    os.kill(pid, signal.SIGSTOP)
    service.client.post(f"/v1/jobs/{job['id']}/cancel")
    assert service.wait_for(job["id"], timeout_s=30)["state"] == "cancelled"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_worker_killed_with_sigkill_fails_its_job_and_the_next_job_runs(service):
    job = service.submit(**quick(30.0, gpu_ids=[0]))
    pid = service.wait_until(lambda: service.job(job["id"])["metrics"].get("worker_pid"))
    os.kill(pid, signal.SIGKILL)
    failed = service.wait_for(job["id"])
    assert failed["state"] == "failed"
    assert failed["error"]["code"] == "WORKER_CRASHED"
    assert failed["error"]["details"]["signal"] == "SIGKILL"
    nxt = service.submit(**quick(0.1, gpu_ids=[0]))
    assert service.wait_for(nxt["id"])["state"] == "succeeded"
    assert service.client.get("/healthz").status_code == 200


@pytest.mark.parametrize("mode", ["exit", "abort", "segfault"])
def test_a_simulated_crash_fails_the_job_with_worker_crashed(service, mode):
    job = service.submit(**quick(1.0, simulate={"crash_at_step": 1, "crash_mode": mode}))
    failed = service.wait_for(job["id"])
    assert failed["state"] == "failed"
    assert failed["error"]["code"] == "WORKER_CRASHED"


def test_a_simulated_out_of_memory_fails_with_cuda_oom_and_frees_the_lane(service):
    job = service.submit(**quick(1.0, gpu_ids=[0], simulate={"oom_at_step": 2}))
    failed = service.wait_for(job["id"])
    assert failed["state"] == "failed"
    assert failed["error"]["code"] == "CUDA_OOM"
    lanes = {
        g["index"]: g["lane"]["holders"] for g in service.client.get("/v1/gpus").json()["gpus"]
    }
    assert job["id"] not in lanes[0]
    nxt = service.submit(**quick(0.1, gpu_ids=[0]))
    assert service.wait_for(nxt["id"])["state"] == "succeeded"


def test_the_job_log_is_readable_through_the_api(service):
    job = service.submit(**quick(0.2))
    service.wait_for(job["id"])
    logs = service.client.get(f"/v1/jobs/{job['id']}/logs", params={"tail": 50}).json()
    assert logs["job_id"] == job["id"]
    assert any("starting in pid" in line for line in logs["lines"])
    assert len(service.client.get(f"/v1/jobs/{job['id']}/logs?tail=1").json()["lines"]) == 1


def test_batched_status_returns_known_jobs_and_names_missing_ones(service):
    job = service.submit(**quick(0.1))
    response = service.client.post("/v1/jobs/status", json={"ids": [job["id"], "nope"]})
    assert response.status_code == 200
    assert [j["id"] for j in response.json()["jobs"]] == [job["id"]]
    assert response.json()["missing"] == ["nope"]


def test_jobs_can_be_listed_by_state_and_kind(service):
    job = service.submit(**quick(0.1))
    service.wait_for(job["id"])
    listed = service.client.get("/v1/jobs", params={"state": "succeeded", "kind": "diagnostic"})
    jobs = listed.json()["jobs"]
    assert job["id"] in [j["id"] for j in jobs]
    assert {j["state"] for j in jobs} == {"succeeded"}
    assert len(service.client.get("/v1/jobs?limit=1").json()["jobs"]) == 1


def test_healthz_answers_at_once_while_two_cpu_burning_jobs_run(service):
    burning = [
        service.submit(kind="diagnostic", spec={"seconds": 3, "burn_cpu": True}, gpu_ids=[g])
        for g in (0, 1)
    ]
    for job in burning:
        service.wait_for(job["id"], states={"running"})
    answered_while_burning = 0
    for _ in range(5):
        assert httpx.get(f"{service.url}/healthz", timeout=5).status_code == 200
        states = {service.job(j["id"])["state"] for j in burning}
        answered_while_burning += states == {"running"}
    assert answered_while_burning >= 1
    for job in burning:
        assert service.wait_for(job["id"])["state"] == "succeeded"


def test_gpus_report_runtime_telemetry_and_lane_holders(service):
    job = service.submit(**quick(1.5, gpu_ids=[1], memory_estimate_mib=4096))
    service.wait_for(job["id"], states={"running"})
    gpus = service.client.get("/v1/gpus").json()
    assert gpus["runtime"] == "simulated"
    by_index = {g["index"]: g for g in gpus["gpus"]}
    assert by_index[1]["lane"]["holders"] == [job["id"]]
    assert by_index[1]["memory_used_mib"] >= 4096
    assert by_index[1]["utilization_pct"] > 50
    assert by_index[1]["memory_total_mib"] == 24 * 1024
    service.wait_for(job["id"])


def test_metrics_use_the_dcgm_and_carril_names(service):
    job = service.submit(**quick(0.1))
    service.wait_for(job["id"])
    text = httpx.get(f"{service.url}/metrics").text
    for name in (
        "DCGM_FI_DEV_GPU_UTIL{",
        "DCGM_FI_DEV_FB_USED{",
        "DCGM_FI_DEV_FB_FREE{",
        "DCGM_FI_DEV_GPU_TEMP{",
        "DCGM_FI_DEV_POWER_USAGE{",
        'carril_lane_held{gpu="0"}',
        'carril_lane_capacity{gpu="1"} 1.0',
        'carril_queue_depth{kind="diagnostic"}',
        "carril_admission_wait_seconds_bucket{",
        'carril_job_run_seconds_count{kind="diagnostic",outcome="succeeded"}',
        'carril_jobs_total{kind="diagnostic",outcome="succeeded"}',
        'carril_runtime_info{runtime="simulated"} 1.0',
        'carril_worker_restarts_total{gpu="1"}',
        'carril_jobs_total{kind="diagnostic",outcome="cancelled"}',
    ):
        assert name in text, name


def test_one_gpu_diagnostic_jobs_asking_for_the_resident_worker_share_one_process(service):
    resident = {"seconds": 0.1, "step_s": 0.05, "worker": "resident"}
    pids = []
    for _ in range(3):
        job = service.submit(kind="diagnostic", spec=resident, gpu_ids=[0])
        done = service.wait_for(job["id"])
        assert done["state"] == "succeeded"
        pids.append(done["metrics"]["worker_pid"])
    assert len(set(pids)) == 1  # reused: no process started per job
    fresh = [
        service.wait_for(service.submit(**quick(0.1, gpu_ids=[0]))["id"])["metrics"]["worker_pid"]
        for _ in range(2)
    ]
    # A fresh job never shares its process, with the resident worker or another job.
    assert len(set(fresh)) == 2
    assert pids[0] not in fresh


def test_a_cancelled_resident_diagnostic_job_stops_and_its_worker_serves_the_next(service):
    spec = {"seconds": 30, "step_s": 0.1, "worker": "resident"}
    job = service.submit(kind="diagnostic", spec=spec, gpu_ids=[1])
    pid = service.wait_until(lambda: service.job(job["id"])["metrics"].get("worker_pid"))
    service.client.post(f"/v1/jobs/{job['id']}/cancel")
    cancelled = service.wait_for(job["id"], timeout_s=30)
    assert cancelled["state"] == "cancelled"
    assert cancelled["result"]["stopped"] is True
    nxt = service.submit(kind="diagnostic", spec={**spec, "seconds": 0.1}, gpu_ids=[1])
    done = service.wait_for(nxt["id"])
    assert done["state"] == "succeeded"
    assert done["metrics"]["worker_pid"] == pid


def test_an_unknown_worker_style_is_refused_at_submit_naming_the_field(service):
    response = service.client.post(
        "/v1/jobs", json={"kind": "diagnostic", "spec": {"seconds": 0, "worker": "shared"}}
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["errors"][0]["field"] == "worker"
