from __future__ import annotations

import pytest

from gpu_service.errors import ValidationFailed
from gpu_service.runtime.base import LaneLoad
from gpu_service.runtime.simulated import SimulatedRuntime, parse_simulated_gpus


def test_it_parses_counts_and_sizes():
    assert parse_simulated_gpus("2x24GiB") == [24576, 24576]
    assert parse_simulated_gpus("1x80GiB,1x512MiB") == [81920, 512]
    assert parse_simulated_gpus("0") == []


@pytest.mark.parametrize("spec", ["two", "2x", "2x24furlongs"])
def test_it_refuses_a_spec_it_cannot_read(spec):
    with pytest.raises(ValidationFailed):
        parse_simulated_gpus(spec)


def test_idle_gpus_look_idle():
    gpus = SimulatedRuntime.from_spec("2x24GiB").inventory()
    assert [g.index for g in gpus] == [0, 1]
    assert all(g.utilization_pct == 0 for g in gpus)
    assert gpus[0].memory_free_mib + gpus[0].memory_used_mib == 24576
    assert gpus[0].uuid != gpus[1].uuid


def test_telemetry_follows_the_lanes():
    runtime = SimulatedRuntime.from_spec("2x24GiB")
    runtime.observe_lanes(loads={0: LaneLoad(jobs=1, reserved_mib=8192), 1: LaneLoad(0, 0)})
    busy, idle = runtime.inventory()
    assert busy.utilization_pct > 90
    assert busy.memory_used_mib >= 8192
    assert busy.temperature_c > idle.temperature_c
    assert busy.power_w > idle.power_w
    assert idle.utilization_pct == 0


def test_a_job_without_an_estimate_still_shows_memory_in_use():
    runtime = SimulatedRuntime.from_spec("1x10GiB")
    runtime.observe_lanes(loads={0: LaneLoad(jobs=1, reserved_mib=0)})
    assert runtime.inventory()[0].memory_used_mib > 1024


def test_workers_see_no_cuda_device():
    assert SimulatedRuntime.from_spec("2x24GiB").child_env(gpu_ids=[1]) == {
        "CUDA_VISIBLE_DEVICES": ""
    }
