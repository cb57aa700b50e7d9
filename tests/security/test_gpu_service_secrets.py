"""Processes the GPU service starts (job workers, the weights helper) do not inherit its
token or any other secret it was started with."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from gpu_service.secret_environment import drop_secrets
from tests.support.gpu_service import GpuServiceProcess

TOKEN = "gpu-token-that-must-stay-in-the-service-4f1c"
SECRET_KEY = "django-secret-the-service-was-handed-9d2a"


@pytest.fixture
def service(tmp_path: Path):
    service = GpuServiceProcess(
        storage=tmp_path / "storage",
        token=TOKEN,
        gpus="1x24GiB",
        env={"CARRIL_SECRET_KEY": SECRET_KEY, "DATABASE_URL": "postgres://u:pw-9d2a@db/x"},
    )
    yield service.start()
    service.stop()


def _environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


def test_workers_and_the_weights_helper_do_not_inherit_the_gpu_service_token(
    service: GpuServiceProcess,
) -> None:
    job = service.submit(kind="diagnostic", spec={"seconds": 30, "step_s": 0.1})
    worker_pid = service.wait_until(
        lambda: service.job(job["id"]).get("metrics", {}).get("worker_pid"),
        what="the diagnostic worker to report its pid",
    )
    # Wakes the weights helper process (the fingerprint is unknown: 404).
    assert service.client.get(f"/v1/weights/{'0' * 64}").status_code == 404

    children = psutil.Process(service.pid).children(recursive=True)
    pids = {child.pid for child in children}
    # The worker, the weights helper, and multiprocessing's resource tracker.
    assert worker_pid in pids
    assert len(pids) >= 2
    # The service itself was started with the secrets: the test would prove nothing else.
    assert TOKEN.encode() in _environ(service.pid)
    for pid in pids:
        environ = _environ(pid)
        assert TOKEN.encode() not in environ, f"pid {pid} inherited the token"
        assert SECRET_KEY.encode() not in environ, f"pid {pid} inherited the secret key"
        assert b"pw-9d2a" not in environ, f"pid {pid} inherited the database URL"
        assert b"CARRIL_STORAGE=" in environ  # what is not secret is still inherited
    service.client.post(f"/v1/jobs/{job['id']}/cancel")


def test_only_secret_looking_variables_are_dropped() -> None:
    environ = {
        "CARRIL_GPU_SERVICE_TOKEN": "t",
        "CARRIL_SECRET_KEY": "k",
        "CARRIL_DEMO_PASSWORD": "p",
        "DATABASE_URL": "postgres://u:p@h/d",
        "AWS_SECRET_ACCESS_KEY": "a",
        "CARRIL_STORAGE": "/srv",
        "CUDA_VISIBLE_DEVICES": "0",
        "PATH": "/usr/bin",
        "CARRIL_TOKEN_TTL_DAYS": "30",
    }

    dropped = drop_secrets(environ)

    assert dropped == [
        "AWS_SECRET_ACCESS_KEY",
        "CARRIL_DEMO_PASSWORD",
        "CARRIL_GPU_SERVICE_TOKEN",
        "CARRIL_SECRET_KEY",
        "CARRIL_TOKEN_TTL_DAYS",
        "DATABASE_URL",
    ]
    assert environ == {"CARRIL_STORAGE": "/srv", "CUDA_VISIBLE_DEVICES": "0", "PATH": "/usr/bin"}
