"""`manage.py reconcile` runs as a loop in its own process and stops cleanly on SIGTERM."""

from __future__ import annotations

import signal
import time

from tests.support.stack import Stack


def test_the_loop_keeps_passing_while_the_gpu_service_is_away_and_stops_on_sigterm(tmp_path):
    # The stack's GPU service is never started: nothing listens at its address.
    stack = Stack(storage=tmp_path / "storage", reconcile_interval_s=0.1)
    try:
        stack.prepare()
        loop = stack.reconciler_start()
        deadline = time.monotonic() + 120
        passes: set[object] = set()  # distinct pass times: the loop goes on past failures
        while len(passes) < 2 and time.monotonic() < deadline:
            rows = stack.database.rows("SELECT last_pass_at, gpus_error FROM jobs_reconcilerstatus")
            if rows and rows[0]["last_pass_at"]:
                assert rows[0]["gpus_error"], "the unreachable GPU service is recorded"
                passes.add(rows[0]["last_pass_at"])
            time.sleep(0.1)
        assert len(passes) == 2, "the reconciler did not keep passing"
        loop.send_signal(signal.SIGTERM)
        assert loop.wait(timeout=30) == 0
    finally:
        stack.stop()
    assert "reconciler running" in (tmp_path / "storage" / "reconciler.log").read_text()
