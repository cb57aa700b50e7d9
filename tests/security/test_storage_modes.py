"""Storage is its owner's only (ADR 0057): under the common umask 022, the whole stack as
real processes (GPU service, web app, reconciler) takes a dataset upload and runs a job
on the GPU service's workers, and nothing under the storage root, the root included, is
readable, writable or enterable by the group or by other local users."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.support.stack import TERMINAL_WEB, Stack
from tests.web.dataset_zips import good_zip

CREATE = """
from django.contrib.auth.models import User
from jobs.services import _job_create
job = _job_create(owner=User.objects.get(username="alice"), kind="diagnostic",
                  spec={"seconds": 0.2}, gpus=1)
print(str(job.id))
"""


@pytest.fixture
def common_umask():
    """The umask most accounts have (022), for this process and what it starts."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def open_to_others(root: Path) -> list[str]:
    found = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077 and not path.is_symlink():
            found.append(f"{oct(mode)} {path.relative_to(root.parent)}")
    return found


def test_nothing_a_job_leaves_in_storage_is_open_to_other_local_users(tmp_path, common_umask):
    storage = tmp_path / "storage"
    stack = Stack(storage=storage).start()
    try:
        alice = stack.api("alice")
        with open(good_zip(tmp_path / "shapes.zip"), "rb") as handle:
            sent = alice.post("/api/v1/datasets/", data={"name": "shapes"}, files={"file": handle})
        assert sent.status_code == 202, sent.text
        stack.wait_until(
            lambda: alice.get(sent.json()["url"]).json()["state"] != "validating",
            timeout_s=120,
            what="the dataset's validation",
        )
        assert alice.get(sent.json()["url"]).json()["state"] == "ready"
        made = stack.script(CREATE)
        assert made.returncode == 0, made.stderr
        job_id = made.stdout.strip().splitlines()[-1]
        stack.wait_until(
            lambda: stack.web_jobs().get(job_id, {}).get("state") in TERMINAL_WEB,
            timeout_s=120,
            what="the job to end",
        )
        assert stack.web_jobs()[job_id]["state"] == "succeeded"
        assert (storage / "jobs" / job_id / "job.log").is_file()
        assert any((storage / "datasets").iterdir())
        assert (storage / "journal.sqlite3").is_file()
        # Reads the job's log through the web too: what the web serves it can still read.
        assert alice.get(f"/api/v1/jobs/{job_id}/logs/").status_code == 200
    finally:
        stack.stop()
    assert open_to_others(storage) == []
