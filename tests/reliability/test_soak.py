"""The soak: a seeded stream of mixed jobs while the GPU service and the reconciler are
killed (SIGKILL) and started again at random, 20 times in all.

On PostgreSQL (DATABASE_URL set) the web side is scaled out: two submitters create and
deliver the jobs (each half of the stream, with the web app's own create-then-deliver-
on-commit code, as a request would), two web processes (gunicorn) take their cancels
through the API, and two reconcilers run side by side, each killed at random; still
every job is delivered exactly once. On SQLite, which has one writer, one of each.

Afterwards every job has ended, none is lost, none ran twice (let alone twice at once),
and the web database and the GPU service's journal tell the same story. Short diagnostic
jobs stand in for training: delivery, admission, workers, cancel and recovery are the
same for every kind, and the training resume is proven on its own in
tests/gpu_service/workloads/test_through_the_service.py.
"""

from __future__ import annotations

import json
import random
import signal
import sys
import time

import psutil
import pytest

from tests.support.gpu_service import GpuServiceProcess
from tests.support.stack import TERMINAL_WEB, Stack, error_code

pytestmark = pytest.mark.slow

SEED = 20261130
JOBS = 36
KILLS = 20


def _plan(rng: random.Random) -> list[dict]:
    plan, at = [], 0.0
    for _ in range(JOBS):
        at += rng.uniform(0.3, 1.6)
        plan.append(
            {
                "at_s": round(at, 2),
                "spec": {"seconds": round(rng.uniform(0.2, 2.5), 2), "step_s": 0.1},
                "gpus": 2 if rng.random() < 0.15 else 1,
                "cancel_after_s": round(rng.uniform(0.0, 1.5), 2) if rng.random() < 0.2 else None,
            }
        )
    return plan


def _worker_pids(gpu: GpuServiceProcess) -> list[psutil.Process]:
    try:
        return psutil.Process(gpu.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _gone(process: psutil.Process) -> bool:
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_jobs_survive_twenty_random_kills_of_the_gpu_service_and_the_reconciler(tmp_path):
    rng = random.Random(SEED)
    storage = tmp_path / "storage"
    gpu = GpuServiceProcess(storage=storage, gpus="2x24GiB")
    # Short backoffs: a job refused by a dead service many times is still retried soon.
    web = Stack(
        storage=storage,
        gpu=gpu,
        reconcile_interval_s=0.3,
        env={"CARRIL_DISPATCH_BACKOFF_MAX_S": "3"},
    )
    scale = 2 if web.database.postgres else 1  # web processes, and reconcilers
    try:
        web.start(users={"soak": "user"}, web=False, reconcilers=scale)
        web_urls = [web.web_start() for _ in range(scale)]
        plan = _plan(rng)
        argv = [sys.executable, "-m", "tests.reliability.soak_submitter"]
        submitters, ids_paths = [], []
        for index, url in enumerate(web_urls):
            plan_path, ids_path = tmp_path / f"plan-{index}.json", tmp_path / f"ids-{index}.txt"
            plan_path.write_text(json.dumps(plan[index::scale]))
            ids_paths.append(ids_path)
            name = "submitter" if index == 0 else f"submitter-{index + 1}"
            token = web.token("soak", url=url)
            submitters.append(web.spawn(name, [*argv, str(plan_path), str(ids_path), url, token]))

        survivors: list[psutil.Process] = []  # workers of a killed GPU service
        kills = {"gpu": 0, "reconciler": 0}
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.5, 3.0))
            target = rng.choice(["gpu", "reconciler"])
            kills[target] += 1
            if target == "gpu":
                workers = _worker_pids(gpu)
                gpu.kill(signal.SIGKILL)
                time.sleep(rng.uniform(0.0, 1.0))
                gpu.start()
                # Start-up recovery has run: no worker of the old service is still going.
                survivors += [w for w in workers if not _gone(w)]
            else:
                index = rng.randrange(scale) if scale > 1 else 0
                web.reconciler_kill(signal.SIGKILL, index=index)
                time.sleep(rng.uniform(0.0, 1.0))
                web.reconciler_start(index)
        assert min(kills.values()) >= 5, kills

        for submitter in submitters:
            assert submitter.wait(timeout=120) == 0, web.logs()
        ids = [i for path in ids_paths for i in path.read_text().split()]
        assert len(ids) == len(set(ids)) == JOBS

        def all_done() -> bool:
            jobs = web.web_jobs()
            return all(jobs[i]["state"] in TERMINAL_WEB for i in ids)

        # A claim left by a killed reconciler lapses after 30 s; then the job is delivered.
        web.wait_until(all_done, timeout_s=150, what="every job to end")
        web_jobs, journal = web.web_jobs(), web.journal_jobs()

        assert survivors == []
        # None lost, and each job ended the same way on both sides.
        assert {j["state"] for j in web_jobs.values()} <= {"succeeded", "failed", "cancelled"}
        by_key = {}
        for gpu_job in journal.values():
            assert gpu_job["web_job"] in web_jobs, gpu_job  # no stray GPU job
            assert gpu_job["web_job"] not in by_key  # one GPU job per web job
            by_key[gpu_job["web_job"]] = gpu_job
        for job_id in ids:
            row = web_jobs[job_id]
            gpu_job = by_key.get(job_id)
            if gpu_job is None:  # cancelled before it was ever delivered
                assert row["state"] == "cancelled", row
                assert row["gpu_job_id"] == "", row
                continue
            assert row["gpu_job_id"] == gpu_job["id"], (row, gpu_job)
            assert (row["state"], row["error_code"]) == (gpu_job["state"], error_code(gpu_job))
            # Never run twice: a diagnostic does not resume, so one start at most.
            log = storage / "jobs" / gpu_job["id"] / "job.log"
            starts = log.read_text().count(" starting in pid ") if log.exists() else 0
            assert gpu_job["attempt"] == 1
            assert starts <= 1, log.read_text()
        # The faults really happened: some jobs were cut short, most got through.
        outcomes = [(r["state"], r["error_code"]) for r in web_jobs.values()]
        assert ("succeeded", "") in outcomes
        assert any(state == "cancelled" for state, _ in outcomes)
        assert gpu.client.get("/v1/jobs", params={"state": "running"}).json()["jobs"] == []
        # Scaled out, both reconcilers and both web processes really took part.
        for index in range(1, scale + 1):
            suffix = "" if index == 1 else f"-{index}"
            log = (storage / f"reconciler{suffix}.log").read_text()
            assert "reconciled: " in log, web.logs()
            assert "/cancel/" in (storage / f"web{suffix}.log").read_text(), web.logs()
    finally:
        web.stop()  # the GPU service and the database too
