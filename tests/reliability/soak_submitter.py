"""The soak's user: creates jobs the way the API does and cancels some, on a schedule.

Run as `python -m tests.reliability.soak_submitter PLAN OUT` in the web app's
environment. PLAN is a JSON list of {"at_s", "spec", "gpus", "cancel_after_s"}; each
created job's id is appended to OUT as soon as its row exists.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path


def main(*, plan_path: Path, out_path: Path) -> None:
    import django

    django.setup()
    from carril_web.errors import Conflict
    from django.contrib.auth.models import User
    from jobs.models import Job
    from jobs.services import _job_create, job_cancel

    def cancel(job_id: str) -> None:
        with contextlib.suppress(Conflict):  # it finished first
            job_cancel(job=Job.objects.get(id=job_id))

    plan = json.loads(plan_path.read_text())
    owner = User.objects.get_or_create(username="soak")[0]
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
    main(plan_path=Path(sys.argv[1]), out_path=Path(sys.argv[2]))
