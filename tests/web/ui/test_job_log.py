"""A cancelled job's log folds the traceback of the stop; other logs are left whole."""

from __future__ import annotations

from ui.job_log import FOLDED, log_folded

LOG = [
    "epoch 2 done",
    "Traceback (most recent call last):",
    '  File "train.py", line 3, in <module>',
    "    trainer.train()",
    "KeyboardInterrupt",
    "worker stopped",
]


def test_a_cancelled_jobs_traceback_is_folded_out_of_the_lines_shown():
    shown, folded = log_folded(lines=LOG, state="cancelled")
    assert shown == ["epoch 2 done", FOLDED, "worker stopped"]
    assert folded == LOG[1:5]


def test_two_tracebacks_in_a_row_fold_into_one_line():
    shown, folded = log_folded(lines=LOG[1:5] * 2, state="cancelled")
    assert shown == [FOLDED]
    assert len(folded) == 8


def test_a_traceback_at_the_very_end_is_folded_whole():
    shown, folded = log_folded(lines=LOG[:4], state="cancelled")
    assert shown == ["epoch 2 done", FOLDED]
    assert folded == LOG[1:4]


def test_a_failed_jobs_log_is_left_whole():
    assert log_folded(lines=LOG, state="failed") == (LOG, [])


def test_a_log_without_a_traceback_is_left_whole():
    lines = ["epoch 1 done", "epoch 2 done"]
    assert log_folded(lines=lines, state="cancelled") == (lines, [])
