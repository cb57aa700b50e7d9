"""The real runtime against a fake NVML module (the only way to test it without a GPU)."""

from __future__ import annotations

import sys
import types

import pytest

from gpu_service.runtime.nvml import NvmlRuntime
from gpu_service.runtime.select import runtime_select
from gpu_service.settings import load_settings

MIB = 1024 * 1024


class NVMLError(Exception):
    pass


def fake_nvml(*, count: int, fail_init: bool = False) -> types.ModuleType:
    nvml = types.ModuleType("pynvml")
    nvml.NVML_TEMPERATURE_GPU = 0

    def init():
        if fail_init:
            raise NVMLError("Driver Not Loaded")

    def power(handle):
        raise NVMLError("Not Supported")

    nvml.nvmlInit = init
    nvml.nvmlDeviceGetCount = lambda: count
    nvml.nvmlDeviceGetHandleByIndex = lambda i: i
    nvml.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    nvml.nvmlDeviceGetUUID = lambda h: f"GPU-{h}"
    nvml.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(
        total=80 * 1024 * MIB, used=1024 * MIB, free=79 * 1024 * MIB
    )
    nvml.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=42, memory=10)
    nvml.nvmlDeviceGetTemperature = lambda h, sensor: 55
    nvml.nvmlDeviceGetPowerUsage = power
    return nvml


def test_it_reads_each_gpu_through_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(count=2))
    gpus = NvmlRuntime().inventory()
    assert [(g.index, g.uuid, g.name) for g in gpus] == [
        (0, "GPU-0", "NVIDIA H200"),
        (1, "GPU-1", "NVIDIA H200"),
    ]
    assert gpus[0].memory_total_mib == 80 * 1024
    assert gpus[0].memory_free_mib == 79 * 1024
    assert gpus[0].utilization_pct == 42
    assert gpus[0].temperature_c == 55
    assert gpus[0].power_w is None  # not supported on this board: reported as unknown


def test_an_nvml_failure_reads_as_zero_gpus(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(count=2, fail_init=True))
    assert NvmlRuntime().inventory() == []


def test_workers_are_pinned_with_cuda_visible_devices():
    env = NvmlRuntime().child_env(gpu_ids=[1, 0])
    assert env["CUDA_VISIBLE_DEVICES"] == "1,0"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_auto_falls_back_to_simulated_without_gpus(monkeypatch, tmp_path, caplog):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(count=0))
    settings = load_settings(storage=tmp_path, gpu_runtime="auto", simulated_gpus="1x8GiB")
    runtime = runtime_select(settings=settings)
    assert runtime.name == "simulated"
    assert "SIMULATED" in caplog.text


def test_auto_picks_the_real_runtime_when_nvml_finds_gpus(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(count=1))
    settings = load_settings(storage=tmp_path, gpu_runtime="auto")
    assert runtime_select(settings=settings).name == "real"


def test_real_without_gpus_refuses_to_start(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(count=0))
    with pytest.raises(Exception, match="no GPU"):
        runtime_select(settings=load_settings(storage=tmp_path, gpu_runtime="real"))
