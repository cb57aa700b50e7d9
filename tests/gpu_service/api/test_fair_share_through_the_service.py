"""Fair share through the real service (issue 16): the rank a client sends with a job is
journalled and orders the queue, and each finished attempt's usage is in the record."""

from __future__ import annotations

import pytest

from tests.support.gpu_service import GpuServiceProcess


@pytest.fixture
def service(tmp_path):
    gpu = GpuServiceProcess(storage=tmp_path / "storage", gpus="1x24GiB").start()
    yield gpu
    gpu.stop()


def test_the_lighter_users_job_starts_first_and_each_job_reports_its_usage(service):
    blocker = service.submit(kind="diagnostic", spec={"seconds": 1.5})
    heavy = service.submit(kind="diagnostic", spec={"seconds": 0.2}, fair_share_rank=40.0)
    light = service.submit(kind="diagnostic", spec={"seconds": 0.2}, fair_share_rank=1.5)
    records = {job["id"]: service.wait_for(job["id"]) for job in (blocker, heavy, light)}
    assert {record["state"] for record in records.values()} == {"succeeded"}
    assert records[light["id"]]["started_at"] < records[heavy["id"]]["started_at"]
    for record in records.values():
        [usage] = record["usage"]
        assert usage["gpus"] == 1
        assert usage["energy_source"] == "modelled"
        assert usage["gpu_model"] == "Simulated GPU (24 GiB)"
        assert usage["held_from"] == record["started_at"]
        assert usage["gpu_seconds"] > 0
