"""The scheduling benchmark's trace and its discrete-event simulation (pure, no processes)."""

from __future__ import annotations

import pytest

from bench.trace import TraceJob, lower_bound, simulate, trace_make


def test_the_same_seed_makes_the_same_trace_and_it_mixes_both_kinds() -> None:
    first = trace_make(jobs=12, seed=3, unit_s=1.0)

    assert first == trace_make(jobs=12, seed=3, unit_s=1.0)
    assert {job.gpus for job in first} == {1, 2}
    assert first != trace_make(jobs=12, seed=4, unit_s=1.0)


def test_the_lower_bound_is_the_larger_of_spread_gpu_seconds_and_the_longest_job() -> None:
    spread = [TraceJob(0, 2, 4.0), TraceJob(1, 1, 2.0), TraceJob(2, 1, 2.0)]
    long_one = [TraceJob(0, 1, 10.0), TraceJob(1, 1, 1.0)]

    assert lower_bound(spread, gpus=2) == pytest.approx(6.0)
    assert lower_bound(long_one, gpus=2) == pytest.approx(10.0)


def test_fifo_holds_one_gpu_jobs_behind_a_waiting_two_gpu_job_and_carril_backfills() -> None:
    # A long one-GPU job, then a two-GPU job that must wait for it, then short one-GPU jobs
    # that fit on the idle GPU meanwhile.
    trace = [
        TraceJob(0, 1, 10.0),
        TraceJob(1, 2, 2.0),
        TraceJob(2, 1, 3.0),
        TraceJob(3, 1, 3.0),
        TraceJob(4, 1, 3.0),
    ]

    fifo = simulate(trace=trace, policy="fifo")
    carril = simulate(trace=trace, policy="carril")

    assert fifo["makespan_s"] == pytest.approx(10 + 2 + 3 + 3)  # the idle GPU stays idle
    assert carril["makespan_s"] == pytest.approx(12.0)  # 3 x 3 s backfilled beside the 10 s job
    assert carril["ratio"] == pytest.approx(12.0 / lower_bound(trace, gpus=2))
    assert carril["longest_two_gpu_wait_s"] == pytest.approx(10.0)
    assert 0 < carril["busy_fraction"] <= 1


def test_the_per_job_overhead_lengthens_every_job() -> None:
    trace = [TraceJob(0, 1, 1.0), TraceJob(1, 1, 1.0), TraceJob(2, 2, 1.0)]

    plain = simulate(trace=trace, policy="carril")
    slow = simulate(trace=trace, policy="carril", overhead_s=0.5)

    assert plain["makespan_s"] == pytest.approx(2.0)
    assert slow["makespan_s"] == pytest.approx(3.0)
