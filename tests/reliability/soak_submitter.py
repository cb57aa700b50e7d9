"""The soak's user: creates jobs the way the API does and cancels some through the web
app's HTTP API, on a schedule.

Run as `python -m tests.reliability.soak_submitter PLAN OUT WEB_URL TOKEN` in the web
app's environment. PLAN is a JSON list of {"at_s", "spec", "gpus", "cancel_after_s"};
each created job's id is appended to OUT as soon as its row exists. Jobs are created
in this process with the web app's own service (diagnostic jobs have no API route), so
this process delivers them on commit as a web process does; cancels go to the gunicorn
at WEB_URL with the owner's TOKEN.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx


def main(*, plan_path: Path, out_path: Path, web_url: str, token: str) -> None:
    import django

    django.setup()
    from django.contrib.auth.models import User
    from jobs.services import _job_create

    web = httpx.Client(base_url=web_url, headers={"Authorization": f"Token {token}"}, timeout=60)

    def cancel(job_id: str) -> None:
        response = web.post(f"/api/v1/jobs/{job_id}/cancel/")
        # 409: it finished first.
        if response.status_code not in (202, 409):
            raise RuntimeError(f"cancel of {job_id}: {response.status_code} {response.text}")

    plan = json.loads(plan_path.read_text())
    owner = User.objects.get(username="soak")
    started = time.monotonic()
    cancels: list[tuple[float, str]] = []
    with out_path.open("a") as out:
        for item in plan:
            _wait_until(item["at_s"], started=started, cancels=cancels, cancel=cancel)
            job = _job_create(owner=owner, kind="diagnostic", spec=item["spec"], gpus=item["gpus"])
            out.write(f"{job.id}\n")
            out.flush()
            if item["cancel_after_s"] is not None:
                cancels.append((item["at_s"] + item["cancel_after_s"], str(job.id)))
        _wait_until(float("inf"), started=started, cancels=cancels, cancel=cancel)
    web.close()


def _wait_until(
    until: float,
    *,
    started: float,
    cancels: list[tuple[float, str]],
    cancel: Callable[[str], None],
) -> None:
    """Wait until `until` (seconds since start; inf: until no cancel is left), cancelling
    what falls due meanwhile."""
    while True:
        cancels.sort()
        if not cancels or cancels[0][0] > until:
            if until != float("inf"):
                time.sleep(max(0.0, until - (time.monotonic() - started)))
            return
        due, job_id = cancels.pop(0)
        time.sleep(max(0.0, due - (time.monotonic() - started)))
        cancel(job_id)


if __name__ == "__main__":
    main(
        plan_path=Path(sys.argv[1]),
        out_path=Path(sys.argv[2]),
        web_url=sys.argv[3],
        token=sys.argv[4],
    )
