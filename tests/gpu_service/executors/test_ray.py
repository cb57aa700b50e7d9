"""The Ray executor through the real GPU service API, on a local cluster of two 2-GPU nodes.

Workers run on the simulated runtime (on the CPU). Each test starts its own GPU service
in Ray mode against the session's cluster; the cluster fixture brings a killed node back
before the next test, and actors a test leaves behind are killed after it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from gpu_service.cluster import NAMESPACE
from tests.support.gpu_service import GpuServiceProcess

HOSTS = {"node-0", "node-1"}


@pytest.fixture
def ray_service(ray_cluster, tmp_path: Path):
    """Factory: a GPU service in Ray mode on the test cluster; stopped after the test."""
    started: list[GpuServiceProcess] = []

    def start(**env: str) -> GpuServiceProcess:
        service = GpuServiceProcess(
            storage=tmp_path / "storage",
            gpus="1x24GiB",  # the head's own runtime; the cluster's GPUs are what count
            env={
                "CARRIL_EXECUTOR": "ray",
                "CARRIL_RAY_ADDRESS": ray_cluster.address,
                "CARRIL_CANCEL_GRACE_S": "2",
                "CARRIL_WORKER_THREADS": "1",
                "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
                "RAY_USAGE_STATS_ENABLED": "0",
                **env,
            },
            startup_timeout_s=120,
        ).start()
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()
    _kill_leftover_actors(ray_cluster)


def _driver(cluster):
    import ray

    if not ray.is_initialized():
        ray.init(address=cluster.address, namespace=NAMESPACE, log_to_driver=False)
    return ray


def _attempt_actors(cluster) -> list[str]:
    """Names of the attempt actors alive on the cluster (`<job id>/<attempt>`)."""
    ray = _driver(cluster)
    return sorted(
        entry["name"]
        for entry in ray.util.list_named_actors(all_namespaces=True)
        if entry["namespace"] == NAMESPACE
    )


def _kill_leftover_actors(cluster) -> None:
    ray = _driver(cluster)
    for name in _attempt_actors(cluster):
        with contextlib.suppress(ValueError):  # gone meanwhile
            ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)


def _placement(service: GpuServiceProcess, job_id: str, *, timeout_s: float = 90) -> dict:
    """Where Ray placed the job's current attempt, once its actor has started."""
    return service.wait_until(
        lambda: service.job(job_id)["metrics"].get("placement"),
        timeout_s=timeout_s,
        what=f"job {job_id} to start on a node",
    )


def _ends(pid: int, *, timeout_s: float = 15) -> bool:
    """True once the process is gone (or a zombie) within the timeout."""
    try:
        psutil.Process(pid).wait(timeout=timeout_s)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        return False
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def _diagnostic(service: GpuServiceProcess, *, seconds: float, gpus: int = 1, **body) -> dict:
    if "gpu_ids" not in body:
        body["gpus"] = gpus
    return service.submit(kind="diagnostic", spec={"seconds": seconds, "step_s": 0.2}, **body)


def test_the_gpus_are_listed_with_their_host(ray_service):
    service = ray_service()
    gpus = service.client.get("/v1/gpus").json()["gpus"]
    assert Counter(gpu["host"] for gpu in gpus) == {"node-0": 2, "node-1": 2}
    assert {gpu["memory_total_mib"] for gpu in gpus} == {24 * 1024}


def test_a_host_that_joins_later_gets_lanes_without_a_restart(ray_service, ray_cluster):
    service = ray_service()
    try:
        ray_cluster.node_add(host="node-2")
        gpus = service.wait_until(
            lambda: [
                g for g in service.client.get("/v1/gpus").json()["gpus"] if g["host"] == "node-2"
            ],
            timeout_s=30,
            what="node-2's GPUs",
        )
        assert len(gpus) == 2
        job = _diagnostic(service, seconds=0.5, gpu_ids=[gpus[0]["index"]])
        assert _placement(service, job["id"])["host"] == "node-2"
        assert service.wait_for(job["id"], timeout_s=60)["state"] == "succeeded"
    finally:
        ray_cluster.node_kill("node-2")


def test_two_gpu_jobs_each_land_whole_on_one_node_at_the_same_time(ray_service):
    service = ray_service()
    jobs = [_diagnostic(service, seconds=10, gpus=2) for _ in range(2)]

    placements = [_placement(service, job["id"]) for job in jobs]
    running = [service.job(job["id"]) for job in jobs]

    assert [job["state"] for job in running] == ["running", "running"]
    assert {p["host"] for p in placements} == HOSTS  # one job per node
    for placement in placements:
        assert sorted(placement["node_gpu_ids"]) == [0, 1]  # both GPUs of its node
    for job in jobs:
        assert service.wait_for(job["id"], timeout_s=90)["state"] == "succeeded"


def test_four_one_gpu_jobs_spread_over_both_nodes_and_a_fifth_waits_then_runs(ray_service):
    service = ray_service()
    jobs = [_diagnostic(service, seconds=10) for _ in range(4)]
    waiting = _diagnostic(service, seconds=0.2)

    placements = [_placement(service, job["id"]) for job in jobs]
    assert Counter(p["host"] for p in placements) == {"node-0": 2, "node-1": 2}
    assert service.job(waiting["id"])["state"] == "queued"  # every GPU is taken
    assert service.wait_for(waiting["id"], timeout_s=120)["state"] == "succeeded"
    for job in jobs:
        assert service.wait_for(job["id"], timeout_s=60)["state"] == "succeeded"


def test_a_request_no_node_could_hold_is_refused_naming_the_largest_node(ray_service):
    service = ray_service()
    response = service.client.post(
        "/v1/jobs", json={"kind": "diagnostic", "spec": {"seconds": 1}, "gpus": 3}
    )
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "RESOURCE_UNAVAILABLE"
    assert "2" in error["message"]
    assert error["details"]["largest_host"] in HOSTS
    assert service.client.get("/v1/jobs").json()["jobs"] == []  # nothing recorded


def test_a_duplicate_submit_answers_the_same_job_and_runs_it_once(ray_service, ray_cluster):
    service = ray_service()
    body = {"kind": "diagnostic", "spec": {"seconds": 3, "step_s": 0.2}, "job_id": "dup-1"}
    first = service.client.post("/v1/jobs", json=body)
    second = service.client.post("/v1/jobs", json=body)

    assert (first.status_code, second.status_code) == (202, 200)
    assert first.json()["id"] == second.json()["id"] == "dup-1"
    _placement(service, "dup-1")
    assert [n for n in _attempt_actors(ray_cluster) if n.startswith("dup-1/")] == ["dup-1/1"]
    assert service.wait_for("dup-1", timeout_s=60)["state"] == "succeeded"


def test_cancel_stops_the_work_on_its_node_and_frees_its_gpus(ray_service):
    service = ray_service()
    job = _diagnostic(service, seconds=120, gpus=2)
    placement = _placement(service, job["id"])

    started = time.monotonic()
    service.client.post(f"/v1/jobs/{job['id']}/cancel")
    done = service.wait_for(job["id"], timeout_s=30)

    assert done["state"] == "cancelled"
    assert time.monotonic() - started < 2 + 10  # the grace, and a few polls on a busy box
    assert _ends(placement["pid"])
    # Its node's two GPUs are free again in Ray: two 2-GPU jobs run side by side.
    after = [_diagnostic(service, seconds=2, gpus=2) for _ in range(2)]
    assert {_placement(service, j["id"])["host"] for j in after} == HOSTS


def test_a_gpu_service_restart_mid_job_neither_kills_nor_duplicates_it(ray_service, ray_cluster):
    service = ray_service()
    job = _diagnostic(service, seconds=8, gpus=1)
    placement = _placement(service, job["id"])
    service.wait_until(lambda: (service.job(job["id"])["progress"].get("batch") or 0) >= 2)

    service.kill(signal.SIGKILL)
    assert psutil.pid_exists(placement["pid"])  # the work lives on on its node
    service.start()
    done = service.wait_for(job["id"], timeout_s=90)

    assert done["state"] == "succeeded", done["error"]
    assert done["attempt"] == 1  # found again by its submission id, not run again
    assert done["result"]["steps_done"] == 40
    assert done["metrics"]["placement"]["pid"] == placement["pid"]
    assert [n for n in _attempt_actors(ray_cluster) if n.startswith(job["id"])] == []


def test_a_stale_attempt_is_stopped_and_never_writes_the_record(ray_service, ray_cluster):
    """The journal moved on to attempt 2 while attempt 1 still runs (as when the service
    requeued a job whose node then came back): attempt 1 is killed, never reported."""
    service = ray_service()
    job = _diagnostic(service, seconds=60, job_id="fence-1")
    stale = _placement(service, job["id"])
    service.kill(signal.SIGKILL)
    with sqlite3.connect(service.storage / "journal.sqlite3") as db:
        db.execute(
            "UPDATE jobs SET state = 'queued', attempt = 2, gpu_ids = '[]', spec = ?"
            " WHERE id = 'fence-1'",
            ('{"seconds": 0.5, "step_s": 0.1, "burn_cpu": false}',),
        )

    service.start()
    done = service.wait_for("fence-1", timeout_s=90)

    assert done["state"] == "succeeded", done["error"]
    assert done["attempt"] == 2
    assert done["metrics"]["placement"]["pid"] != stale["pid"]
    assert done["result"]["steps_done"] == 5  # attempt 2's result, not attempt 1's
    assert _ends(stale["pid"])
    assert "fence-1/1" not in _attempt_actors(ray_cluster)


def test_work_that_cannot_resume_runs_again_when_its_node_dies(ray_service, ray_cluster):
    """An inference (here a diagnostic, which cannot resume either) on a node that dies
    runs again, whole, as the next attempt on another node."""
    service = ray_service()
    job = _diagnostic(service, seconds=4)
    first = _placement(service, job["id"])
    service.wait_until(lambda: (service.job(job["id"])["progress"].get("batch") or 0) >= 2)

    ray_cluster.node_kill(first["host"])
    done = service.wait_for(job["id"], timeout_s=120)

    assert done["state"] == "succeeded", done["error"]
    assert done["attempt"] == 2
    assert done["metrics"]["placement"]["host"] == (HOSTS - {first["host"]}).pop()
    assert done["result"]["steps_done"] == 20


@pytest.mark.slow
def test_a_training_on_a_node_that_dies_resumes_on_the_other_node_and_succeeds(
    ray_service, ray_cluster, tmp_path: Path
):
    from gpu_service.workloads.synthetic import make_shapes_dataset

    make_shapes_dataset(tmp_path / "storage" / "datasets" / "shapes")
    service = ray_service(CARRIL_MAX_ATTEMPTS="3")
    spec = {
        "dataset": "datasets/shapes",
        "model": "yolov8n",
        # Epochs enough that the node is surely gone before attempt 1 could finish them
        # all: on a loaded machine the kill lands a few epochs after it is asked for.
        "epochs": 6,
        "imgsz": 64,
        "batch": 4,
        "seeds": [1],
        "workers": 0,
    }
    job = service.submit(kind="train", spec=spec, gpus=1)
    first = _placement(service, job["id"], timeout_s=120)
    service.wait_until(
        lambda: len(service.job(job["id"])["metrics"].get("epochs", [])) >= 1,
        timeout_s=300,
        what="the first epoch",
    )

    ray_cluster.node_kill(first["host"])
    done = service.wait_for(job["id"], timeout_s=400)

    assert done["state"] == "succeeded", done["error"]
    assert done["attempt"] == 2
    assert done["metrics"]["placement"]["host"] == (HOSTS - {first["host"]}).pop()
    # Resumed from the checkpoint, and attempt 1 wrote nothing after it was fenced off:
    # every epoch once, attempt 1's then attempt 2's.
    epochs = done["metrics"]["epochs"]
    assert [e["epoch"] for e in epochs] == [1, 2, 3, 4, 5, 6]
    attempts = [e["attempt"] for e in epochs]
    assert attempts == sorted(attempts)
    assert set(attempts) == {1, 2}
    assert done["result"]["seeds"][0]["epochs_run"] == 6
    assert _ends(first["pid"])


def _untrained_weights(storage: Path) -> str:
    """An untrained yolov8n saved under storage (no download: built from its yaml)."""
    path = storage / "uploads" / "untrained.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    script = (
        "import sys\n"
        "from ultralytics import YOLO\n"
        "model = YOLO('yolov8n.yaml')\n"
        "model.model.names = {i: f'class-{i}' for i in range(80)}\n"
        "model.save(sys.argv[1])\n"
    )
    env = {
        **os.environ,
        "YOLO_OFFLINE": "1",
        "YOLO_AUTOINSTALL": "false",
        "YOLO_CONFIG_DIR": str(storage / "ultralytics-config"),
    }
    subprocess.run([sys.executable, "-c", script, str(path)], env=env, check=True, timeout=300)
    return "uploads/untrained.pt"


def _infer(service: GpuServiceProcess, *, fingerprint: str, image: str, **body) -> dict:
    spec = {"model": fingerprint, "images": [image], "conf": 0.0, "imgsz": 64, "max_det": 5}
    job = service.submit(kind="infer", spec=spec, **body)
    done = service.wait_for(job["id"], timeout_s=300)
    assert done["state"] == "succeeded", done["error"]
    return done


@pytest.mark.slow
def test_inference_reuses_one_resident_model_per_gpu_and_finds_what_one_machine_finds(
    ray_service, gpu_service, tmp_path: Path
):
    from gpu_service.workloads.synthetic import make_shapes_dataset

    storage = tmp_path / "storage"
    make_shapes_dataset(storage / "datasets" / "shapes")
    image = "datasets/shapes/images/val/000.jpg"
    weights = _untrained_weights(storage)
    service = ray_service()
    fingerprint = service.client.post("/v1/weights", json={"path": weights}).json()["fingerprint"]

    first = _infer(service, fingerprint=fingerprint, image=image, gpu_ids=[0])
    second = _infer(service, fingerprint=fingerprint, image=image, gpu_ids=[0])

    # One long-lived actor on that GPU ran both: the model stayed loaded between them.
    assert first["metrics"]["placement"]["resident"] == second["metrics"]["placement"]["resident"]
    assert first["metrics"]["placement"]["pid"] == second["metrics"]["placement"]["pid"]
    # The same detections as the local executor on one machine, same weights, same image.
    apart = tmp_path / "one-machine"  # its own storage and journal, the same files
    shutil.copytree(storage / "datasets", apart / "datasets")
    shutil.copytree(storage / "uploads", apart / "uploads")
    local = gpu_service(storage=apart, gpus="1x24GiB")
    assert local.client.post("/v1/weights", json={"path": weights}).json()["fingerprint"] == (
        fingerprint
    )
    alone = _infer(local, fingerprint=fingerprint, image=image)
    assert second["result"]["images"][0]["detections"] == alone["result"]["images"][0]["detections"]
    assert len(alone["result"]["images"][0]["detections"]) == 5


def _ray_workers() -> set[int]:
    """Pids of the Ray worker processes on this machine (every node of the test cluster):
    a worker is named `ray::IDLE`, `ray::<actor class>`... once up, by its command before."""
    workers = set()
    for process in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            command = " ".join(process.info["cmdline"] or [])
            if command.startswith("ray::") or "default_worker.py" in command:
                workers.add(process.pid)
    return workers


def test_each_fresh_attempt_starts_in_a_spare_worker_ray_started_before_its_submit(ray_service):
    service = ray_service()
    node_0 = [
        gpu["index"]
        for gpu in service.client.get("/v1/gpus").json()["gpus"]
        if gpu["host"] == "node-0"
    ]
    # Three in a row on one node: more than Ray's own prestart for a cluster's first
    # driver could serve; each actor takes the spare the one before it had replaced.
    for _ in range(3):
        time.sleep(1.5)  # the replacement spare has started
        before = _ray_workers()
        job = _diagnostic(service, seconds=0.2, gpu_ids=[node_0[0]])
        placement = _placement(service, job["id"])
        assert placement["host"] == "node-0"
        assert placement["pid"] in before, "the attempt's actor got a new process"
        assert service.wait_for(job["id"], timeout_s=60)["state"] == "succeeded"
        assert _ends(placement["pid"])  # still one process per attempt
