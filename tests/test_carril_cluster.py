"""`make run-cluster`: `make run` with a local Ray cluster, all of it stopped together."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter

import httpx
import psutil
import pytest

from tests.support.gpu_service import free_port
from tests.test_carril_run import launch, wait_until_answers


@pytest.mark.slow
def test_it_runs_carril_on_two_local_ray_nodes_and_stops_everything_on_sigterm(tmp_path):
    web_port, gpu_port = free_port(), free_port()
    storage = tmp_path / "storage"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CARRIL_", "RAY_"))},
        "CARRIL_STORAGE": str(storage),
        "CARRIL_WEB_PORT": str(web_port),
        "CARRIL_GPU_PORT": str(gpu_port),
        "CARRIL_CLUSTER_NODES": "2",
        "CARRIL_SIMULATED_GPUS": "2x24GiB",
    }
    env.pop("DATABASE_URL", None)
    launcher, output = launch("carril_cluster", env=env)
    try:
        output.wait_for(r"cluster: ray address: 127\.0\.0\.1:\d+", timeout=180)
        output.wait_for(r"Carril is up: http://127\.0\.0\.1:\d+/", timeout=180)
        output.wait_for(r"sign in as demo / \S+", timeout=5)
        assert wait_until_answers(f"http://127.0.0.1:{gpu_port}/healthz", timeout=60).is_success
        token = (storage / "secrets" / "gpu_service_token").read_text().strip()
        gpu = httpx.Client(
            base_url=f"http://127.0.0.1:{gpu_port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        gpus = gpu.get("/v1/gpus").json()["gpus"]
        assert Counter(g["host"] for g in gpus) == {"node-0": 2, "node-1": 2}
        job = gpu.post("/v1/jobs", json={"kind": "diagnostic", "spec": {"seconds": 0.5}}).json()
        deadline = time.monotonic() + 120
        while gpu.get(f"/v1/jobs/{job['id']}").json()["state"] != "succeeded":
            assert time.monotonic() < deadline, output.lines[-40:]
            time.sleep(0.2)
        placement = gpu.get(f"/v1/jobs/{job['id']}").json()["metrics"]["placement"]
        assert placement["host"] in {"node-0", "node-1"}

        family = psutil.Process(launcher.pid).children(recursive=True)
        assert any("raylet" in p.name() for p in family)
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=120) == 0
        _, alive = psutil.wait_procs(family, timeout=30)
        assert [p.pid for p in alive] == []
    finally:
        if launcher.poll() is None:
            launcher.kill()
