"""Long uploads: the request only receives the zip; validation runs on a background
thread of the web process, the dataset shows `validating` with its progress, then
`ready` or `invalid` with its report; an interrupted validation is taken over and
leftovers are removed (ADR 0025).

The whole path under a real gunicorn process is in
tests/web/datasets/test_upload_memory.py (upload, poll, invalid) and below (a
validation interrupted by a dead process, resumed by the next one)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from datasets import background, services
from datasets.models import Dataset
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from tests.web import dataset_zips as z
from tests.web.conftest import PASSWORD

ROOT = Path(__file__).resolve().parents[2]
URL = "/api/v1/datasets/"


def _post(client, path: Path, name: str = "shapes"):
    with open(path, "rb") as handle:
        return client.post(URL, {"name": name, "file": handle}, format="multipart")


def test_the_upload_answers_once_received_and_the_dataset_is_validating(
    owner_api, tmp_path, storage: Path
) -> None:
    response = _post(owner_api, z.good_zip(tmp_path / "good.zip"))
    assert response.status_code == 202
    body = response.json()
    assert body["state"] == "validating"
    assert body["progress"]["stage"] == "queued"
    # Nothing was extracted in the request: only the zip waits in the incoming folder.
    incoming = storage / "datasets" / f".incoming-{body['id']}"
    assert [p.name for p in incoming.iterdir()] == ["upload.zip"]
    assert not (storage / "datasets" / body["id"]).exists()
    assert owner_api.get(body["url"]).json()["state"] == "validating"


def test_a_poll_shows_the_validations_progress_then_the_ready_dataset(
    owner_api, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(services, "_PROGRESS_EVERY_S", 0.0)
    body = _post(owner_api, z.good_zip(tmp_path / "good.zip", per_split=4)).json()
    seen = []
    real_check = services.splits_validate.__globals__["_image_check"]

    def watching(*args, **kwargs):
        # What a client polling the API sees while each image is being checked.
        seen.append(owner_api.get(body["url"]).json()["progress"])
        return real_check(*args, **kwargs)

    monkeypatch.setitem(services.splits_validate.__globals__, "_image_check", watching)
    services.dataset_validate(dataset_id=body["id"])
    assert seen[0]["stage"] == "extracting"  # while the first image is checked
    checking = [p for p in seen if p["stage"] == "checking"]
    assert [p["done"] for p in checking] == list(range(1, 8))
    assert all(p["total"] == 8 for p in checking)
    done = owner_api.get(body["url"]).json()
    assert done["state"] == "ready"
    assert done["progress"] == {}


def test_an_invalid_dataset_keeps_its_report_and_no_files(owner_api, tmp_path, storage) -> None:
    body = _post(owner_api, z.with_label(tmp_path / "bad.zip", "9 0.5 0.5 0.1 0.1")).json()
    services.dataset_validate(dataset_id=body["id"])
    done = owner_api.get(body["url"]).json()
    assert done["state"] == "invalid"
    assert done["report"]["problems"][0]["code"] == "class_out_of_range"
    assert list((storage / "datasets").iterdir()) == []


@pytest.mark.parametrize("state", ["validating", "invalid"])
def test_only_a_ready_dataset_can_be_trained_on(state: str, owner, owner_api, tmp_path) -> None:
    body = _post(owner_api, z.good_zip(tmp_path / "good.zip")).json()
    if state == "invalid":
        Dataset.objects.filter(id=body["id"]).update(state="invalid")
    response = owner_api.post(
        "/api/v1/jobs/train/", {"dataset": body["id"], "model": "yolov8n"}, format="json"
    )
    assert response.status_code == 400
    assert "dataset" in response.json()["error"]["details"]["fields"]


def test_a_dataset_deleted_while_validating_leaves_nothing(owner_api, tmp_path, storage) -> None:
    body = _post(owner_api, z.good_zip(tmp_path / "good.zip")).json()
    assert owner_api.delete(body["url"]).status_code == 204
    assert services.dataset_validate(dataset_id=body["id"]) is None
    assert list((storage / "datasets").iterdir()) == []


def test_an_interrupted_validation_is_taken_over_and_leftovers_are_removed(
    owner, tmp_path, storage: Path, monkeypatch
) -> None:
    monkeypatch.setattr(background, "run_soon", lambda fn, **kw: fn(**kw))  # inline
    upload = SimpleUploadedFile("d.zip", z.good_zip(tmp_path / "good.zip").read_bytes())
    dataset = services.dataset_receive(owner=owner, name="x", upload=upload, validate_after=False)
    root = storage / "datasets"
    # What a process killed mid-validation leaves: a half extraction, a lapsed claim.
    (root / f".incoming-{dataset.id}" / "raw").mkdir()
    Dataset.objects.filter(id=dataset.id).update(claimed_until=timezone.now() - timedelta(1))
    old = time.time() - services.LEFTOVER_AGE_S - 60
    for name in (".incoming-0f0f0f0f-0000-0000-0000-000000000000", ".deleting-abc"):
        (root / name / "raw").mkdir(parents=True)
        os.utime(root / name, (old, old))
    young = root / ".incoming-11111111-0000-0000-0000-000000000000"
    young.mkdir()  # an upload still arriving: kept

    assert services.dataset_validations_resume() == 1

    dataset.refresh_from_db()
    assert dataset.state == "ready"
    assert sorted(p.name for p in root.iterdir()) == sorted([str(dataset.id), young.name])


def test_a_validation_claimed_by_a_live_process_is_left_to_it(owner, tmp_path, monkeypatch) -> None:
    ran = []
    monkeypatch.setattr(background, "run_soon", lambda fn, **kw: ran.append(kw))
    upload = SimpleUploadedFile("d.zip", z.good_zip(tmp_path / "good.zip").read_bytes())
    services.dataset_receive(owner=owner, name="x", upload=upload, validate_after=False)
    assert services.dataset_validations_resume() == 0
    assert ran == []


# --- a real web process -----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_web_process_resumes_a_validation_its_predecessor_did_not_finish(tmp_path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CARRIL_")}
    clean.pop("DATABASE_URL", None)
    env = {**clean, "CARRIL_STORAGE": str(tmp_path), "CARRIL_ENV": "dev"}
    web = ROOT / "web"
    run = {"cwd": web, "env": env, "check": True, "capture_output": True, "timeout": 300}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], **run)
    archive = z.good_zip(tmp_path / "good.zip")
    # The predecessor received the upload, then died before validating it.
    made = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup()\n"
            "from datetime import timedelta\n"
            "from django.contrib.auth.models import User\n"
            "from django.core.files.uploadedfile import SimpleUploadedFile\n"
            "from django.utils import timezone\n"
            "from datasets.models import Dataset\n"
            "from datasets.services import dataset_receive\n"
            f"owner = User.objects.create_user('olivia', password={PASSWORD!r})\n"
            f"upload = SimpleUploadedFile('d.zip', open({str(archive)!r}, 'rb').read())\n"
            "d = dataset_receive(owner=owner, name='x', upload=upload, validate_after=False)\n"
            "Dataset.objects.filter(id=d.id).update(claimed_until=timezone.now())\n"
            "print(d.id)\n",
        ],
        **run,
        text=True,
    )
    dataset_id = made.stdout.strip().splitlines()[-1]
    port = _free_port()
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "carril_web.wsgi:application"),
            *("--bind", f"127.0.0.1:{port}", "--workers", "1"),
        ],
        cwd=web,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        token = None
        while token is None:
            try:
                token = httpx.post(
                    f"{base}/api/v1/auth/token/",
                    json={"username": "olivia", "password": PASSWORD},
                    timeout=30,
                ).json()["token"]
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.3)
        headers = {"Authorization": f"Token {token}"}
        while (
            state := httpx.get(f"{base}{URL}{dataset_id}/", headers=headers, timeout=30).json()[
                "state"
            ]
        ) == "validating":
            assert time.monotonic() < deadline, "the validation was not resumed"
            time.sleep(0.3)
        assert state == "ready"
        assert not any(p.name.startswith(".incoming-") for p in (tmp_path / "datasets").iterdir())
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_another_users_validating_dataset_answers_404(owner_api, other_api, tmp_path) -> None:
    body = _post(owner_api, z.good_zip(tmp_path / "good.zip")).json()
    assert other_api.get(body["url"]).status_code == 404
    assert other_api.delete(body["url"]).status_code == 404
    assert owner_api.get(body["url"]).json()["state"] == "validating"
