"""The GPU service's job records are read once, into the contract's shape."""

from __future__ import annotations

import pytest
from carril_web.errors import GpuServiceUnavailable
from gpu_client import job_status_read

from gpu_service.contract import PROGRESS_KEYS, JobStatus


def test_a_record_is_read_with_every_key_of_the_contract():
    record = job_status_read({"id": "j-1", "state": "running", "progress": {"epoch": 2}})
    assert set(record) == set(JobStatus.__annotations__)
    assert set(record["progress"]) == set(PROGRESS_KEYS)
    assert record["progress"]["epoch"] == 2
    assert record["progress"]["fraction"] == 0.0
    assert record["error"] is None
    assert record["gpu_ids"] == []


@pytest.mark.parametrize(
    "raw", [{"state": "running"}, {"id": "j-1", "state": "paused"}, ["not", "a", "record"]]
)
def test_a_record_the_contract_does_not_describe_is_not_read(raw):
    with pytest.raises(GpuServiceUnavailable):
        job_status_read(raw)


def test_a_job_is_submitted_under_the_web_s_own_id(fake_gpu):
    accepted = fake_gpu.client().job_submit(job_id="abc-1", kind="train", spec={}, gpus=1)
    assert accepted.id == "abc-1"
    again = fake_gpu.client().job_submit(job_id="abc-1", kind="train", spec={}, gpus=1)
    assert (again.id, again.created) == ("abc-1", False)


def test_the_web_app_imports_nothing_of_the_gpu_service_but_its_contract():
    import ast
    from pathlib import Path

    web = Path(__file__).resolve().parents[2] / "web"
    found = set()
    for path in web.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpu_service"):
                found.add(node.module)
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("gpu_service"))
    assert found == {"gpu_service.contract"}
