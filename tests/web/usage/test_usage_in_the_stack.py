"""Usage from real jobs (issue 16): the GPU service, the web app and the reconciler as
processes; diagnostic jobs of two users on the simulated GPUs, one of them on two GPUs
and one cancelled while running. What the web sums (API, and the Prometheus counter)
equals what the journal recorded as lane holding."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.stack import TERMINAL_WEB, Stack

CREATE = """
from django.contrib.auth.models import User
from jobs.services import _job_create
made = []
for name, seconds, gpus in json.loads({jobs!r}):
    owner = User.objects.get(username=name)
    job = _job_create(owner=owner, kind="diagnostic", spec={{"seconds": seconds}}, gpus=gpus)
    made.append(str(job.id))
print(json.dumps(made))
"""


# The per-user counter is served only to a scraper with the metrics token.
METRICS_TOKEN = "metrics-token-for-the-usage-stack-test-7d2e"


@pytest.fixture
def stack(tmp_path):
    stack = Stack(
        storage=tmp_path / "storage",
        reconcile_interval_s=0.2,
        env={"CARRIL_METRICS_TOKEN": METRICS_TOKEN},
    ).start()
    yield stack
    stack.stop()


def test_usage_sums_equal_the_journals_lane_holding_for_real_jobs(stack):
    jobs = [("alice", 1.0, 2), ("alice", 0.5, 1), ("ada", 0.5, 1), ("ada", 30.0, 1)]
    done = stack.script(CREATE.format(jobs=json.dumps(jobs)))
    assert done.returncode == 0, done.stderr
    ids = json.loads(done.stdout.strip().splitlines()[-1])
    long_one = ids[-1]
    stack.wait_until(
        lambda: stack.journal_jobs().get(long_one, {}).get("state") == "running",
        timeout_s=60,
        what="the long job running",
    )
    ada = stack.api("ada")
    assert ada.post(f"/api/v1/jobs/{long_one}/cancel/").status_code in (200, 202)
    stack.wait_until(
        lambda: all(stack.web_jobs()[i]["state"] in TERMINAL_WEB for i in ids),
        timeout_s=120,
        what="every job finished on the web side",
    )
    journal = stack.journal_jobs()
    held: dict[str, float] = {"alice": 0.0, "ada": 0.0}
    for (user, _, gpus), job_id in zip(jobs, ids, strict=True):
        record = journal[job_id]
        [usage] = json.loads(record["usage"])
        # The journal's lane holding: the GPUs it held, from admission to the end.
        assert usage["gpus"] == gpus
        assert usage["held_from"] == record["started_at"]
        assert usage["held_until"] == pytest.approx(record["finished_at"], abs=0.25)
        assert usage["gpu_seconds"] == pytest.approx(
            gpus * (usage["held_until"] - usage["held_from"]), abs=1e-5
        )
        held[user] += usage["gpu_seconds"]
    assert stack.web_jobs()[long_one]["state"] == "cancelled"

    month = stack.web_jobs()[ids[0]]["finished_at"]
    month = str(month)[:7]
    everyone = ada.get(f"/api/v1/usage/?month={month}").json()
    by_user = {row["user"]: row["gpu_seconds"] for row in everyone["by_user"]}
    assert by_user == pytest.approx(held, abs=1e-2)
    assert everyone["totals"]["gpu_seconds"] == pytest.approx(sum(held.values()), abs=1e-2)
    assert everyone["energy_sources"] == ["modelled"]
    own = stack.api("alice").get(f"/api/v1/usage/?month={month}").json()
    assert own["totals"]["gpu_seconds"] == pytest.approx(held["alice"], abs=1e-2)

    metrics = ada.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
    for user, seconds in held.items():
        found = re.search(
            rf'carril_gpu_seconds_total\{{kind="diagnostic",user="{user}"\}} (\S+)', metrics
        )
        assert found is not None, metrics[-2000:]
        assert float(found[1]) == pytest.approx(seconds, abs=1e-2)
