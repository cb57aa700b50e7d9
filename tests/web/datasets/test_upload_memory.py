"""A dataset upload streams to disk: the web worker's memory stays flat whatever the size.

Runs the app under gunicorn, as deployed (the tests' stack harness starts it), and reads
the worker's peak resident memory before and after a 120 MiB upload.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.support.stack import Stack
from tests.support.waiting import wait_until

UPLOAD_MIB = 120
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc"),
]


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def big_zip(path: Path) -> Path:
    chunk = os.urandom(1024 * 1024)  # random bytes: stored, so the ratio cap stays out of it
    with (
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive,
        archive.open("blob.bin", "w") as out,
    ):
        for _ in range(UPLOAD_MIB):
            out.write(chunk)
    return path


def test_a_large_upload_does_not_grow_the_workers_memory(tmp_path):
    stack = Stack(storage=tmp_path / "storage")  # no GPU service: an upload needs none
    try:
        stack.prepare()
        stack.users_create({"demo": "user"})
        base = stack.web_start()
        token = stack.token("demo")
        headers = {"Authorization": f"Token {token}"}
        small = tmp_path / "small.zip"
        with zipfile.ZipFile(small, "w") as archive:
            archive.writestr("x.txt", "x")
        with open(small, "rb") as handle:  # warm up: the first upload imports everything
            httpx.post(
                f"{base}/api/v1/datasets/",
                headers=headers,
                data={"name": "warm"},
                files={"file": handle},
            )
        _, worker = stack.web_pids()  # gunicorn's master, then its one worker
        before = peak_rss_kib(worker)
        with open(big_zip(tmp_path / "big.zip"), "rb") as handle:
            response = httpx.post(
                f"{base}/api/v1/datasets/",
                headers=headers,
                data={"name": "big"},
                files={"file": handle},
                timeout=300,
            )
        assert response.status_code == 202  # received; validated by a background thread
        url = f"{base}{response.json()['url']}"
        dataset = stack.wait_until(
            lambda: (d := httpx.get(url, headers=headers).json())["state"] != "validating" and d,
            timeout_s=300,
            what="the background validation to end",
        )
        assert dataset["state"] == "invalid"  # no data.yaml: refused, after streaming it all
        grown_mib = (peak_rss_kib(worker) - before) / 1024
        assert grown_mib < UPLOAD_MIB / 4, f"worker peak memory grew {grown_mib:.0f} MiB"
        # The temporary file goes when the request ends, which under gunicorn's threads
        # may be a moment after the client has the answer.
        wait_until(
            lambda: not any((tmp_path / "storage" / "uploads" / "tmp").iterdir()),
            timeout_s=30,
            what="the upload's temporary file to be removed",
            logs=stack.logs,
        )
    finally:
        stack.stop()
