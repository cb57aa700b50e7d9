"""Integration: the service is killed and restarted; the journal carries the jobs across."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

import psutil

from gpu_service.journal import Journal


def test_after_a_kill_queued_jobs_run_and_the_running_diagnostic_is_interrupted(gpu_service):
    service = gpu_service(gpus="1x24GiB")
    running = service.submit(kind="diagnostic", spec={"seconds": 60, "step_s": 0.1})
    pid = service.wait_until(lambda: service.job(running["id"])["metrics"].get("worker_pid"))
    queued = [
        service.submit(kind="diagnostic", spec={"seconds": 0.1, "step_s": 0.1}) for _ in range(2)
    ]
    assert {service.job(j["id"])["state"] for j in queued} == {"queued"}

    service.kill(signal.SIGKILL)
    # The worker dies with the service: no GPU is held by an orphan.
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(pid).wait(timeout=10)
    assert not psutil.pid_exists(pid)

    service.start()
    interrupted = service.wait_for(running["id"])
    assert interrupted["state"] == "failed"
    assert interrupted["error"]["code"] == "INTERRUPTED"
    for job in queued:
        assert service.wait_for(job["id"])["state"] == "succeeded"


def test_a_graceful_stop_leaves_no_worker_behind(gpu_service):
    service = gpu_service(gpus="1x24GiB")
    job = service.submit(kind="diagnostic", spec={"seconds": 60, "step_s": 0.1})
    pid = service.wait_until(lambda: service.job(job["id"])["metrics"].get("worker_pid"))
    # uvicorn re-raises the SIGTERM after its graceful shutdown.
    assert service.kill(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in service.log_tail()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    journal = Journal(path=service.storage / "journal.sqlite3")
    assert journal.workers_recorded() == []
    assert journal.job_get(job_id=job["id"]).state.value == "running"  # reconciled on start
    journal.close()
    service.start()
    assert service.wait_for(job["id"])["error"]["code"] == "INTERRUPTED"


def test_the_service_refuses_to_start_in_production_without_a_token(tmp_path):
    env = {
        **os.environ,
        "CARRIL_ENV": "production",
        "CARRIL_STORAGE": str(tmp_path),
        "CARRIL_GPU_RUNTIME": "simulated",
    }
    env.pop("CARRIL_GPU_SERVICE_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-m", "gpu_service"], env=env, capture_output=True, timeout=60, text=True
    )
    assert done.returncode != 0
    assert "CARRIL_GPU_SERVICE_TOKEN" in done.stderr
