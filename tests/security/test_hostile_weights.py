"""Hostile weights files, built here: each is refused (`WEIGHTS_REJECTED`) before loading
it allocates what it asks for, nothing is registered, and the weights helper survives (or
is replaced) so the next import works."""

from __future__ import annotations

import io
import os
import pickle
import resource
import signal
import time
import zipfile
from collections import OrderedDict
from pathlib import Path

import psutil
import pytest

from gpu_service import errors
from gpu_service.workloads import weights
from gpu_service.workloads.safe_load import check_checkpoint
from tests.support.checkpoint import make_checkpoint
from tests.support.gpu_service import GpuServiceProcess

SIDE = 16_000  # Linear(16000, 16000): 256 M parameters, 1 GB of float32


class _CallsLinear:
    """Unpickles as torch.nn.Linear(16000, 16000): the constructor runs with these args."""

    def __reduce__(self):
        import torch

        return (torch.nn.Linear, (SIDE, SIDE))


def constructor_call(path: Path) -> Path:
    import torch

    torch.save({"model": _CallsLinear(), "ema": None}, path)
    return path


def _unicode(text: str) -> bytes:
    return b"X" + len(text).to_bytes(4, "little") + text.encode()


def new_with_arguments(path: Path) -> Path:
    """{"model": torch.Tensor.__new__(torch.Tensor, 16000, 16000), "ema": None}, written
    opcode by opcode (pickle itself refuses to write a NEWOBJ whose class is not the
    object's own)."""
    size = SIDE.to_bytes(2, "little")
    data = (
        b"\x80\x02}("  # PROTO 2, EMPTY_DICT, MARK
        + _unicode("model")
        + b"ctorch\nTensor\n"  # GLOBAL
        + b"M"
        + size
        + b"M"
        + size
        + b"\x86"  # BININT2 x 2, TUPLE2
        + b"\x81"  # NEWOBJ
        + _unicode("ema")
        + b"Nu."  # NONE, SETITEMS, STOP
    )
    return _archive(path, data=data, storages={})


def stride_zero_view(path: Path) -> Path:
    """A real module whose weight is a 16000 x 16000 view of one float (stride 0)."""
    import torch

    layer = torch.nn.Linear(1, 1)
    layer.weight = torch.nn.Parameter(torch.zeros(1).expand(SIDE, SIDE))
    torch.save({"model": layer, "ema": None}, path)
    return path


class _StorageRef:
    pass


class _LyingPickler(pickle.Pickler):
    """Writes a persistent id that declares 256 M floats for a record of 16 bytes."""

    def persistent_id(self, obj):
        import torch

        if isinstance(obj, _StorageRef):
            return ("storage", torch.FloatStorage, "0", "cpu", SIDE * SIDE)
        return None


class _RebuildTensor:
    def __reduce__(self):
        import torch

        return (
            torch._utils._rebuild_tensor_v2,
            (_StorageRef(), 0, (SIDE, SIDE), (SIDE, 1), False, OrderedDict()),
        )


def storage_larger_than_its_record(path: Path) -> Path:
    buffer = io.BytesIO()
    _LyingPickler(buffer, protocol=2).dump({"model": _RebuildTensor(), "ema": None})
    return _archive(path, data=buffer.getvalue(), storages={"0": b"\0" * 16})


def _archive(path: Path, *, data: bytes, storages: dict[str, bytes]) -> Path:
    """The layout torch.save writes: <name>/data.pkl, <name>/data/<key>, version files."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("ckpt/data.pkl", data)
        for key, payload in storages.items():
            archive.writestr(f"ckpt/data/{key}", payload)
        archive.writestr("ckpt/byteorder", "little")
        archive.writestr("ckpt/version", "3\n")
    return path


def compressed_records(path: Path) -> Path:
    """A real small checkpoint, its records deflated (torch.save stores them as they are)."""
    import torch

    plain = path.with_suffix(".plain")
    torch.save({"model": torch.nn.Linear(2, 2), "ema": None}, plain)
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            out.writestr(info.filename, source.read(info.filename))
    plain.unlink()
    return path


HOSTILE = {
    "constructor_call": (constructor_call, "forbidden_call"),
    "new_with_arguments": (new_with_arguments, "constructor_arguments"),
    "stride_zero_view": (stride_zero_view, "tensor_larger_than_storage"),
    "storage_larger_than_its_record": (storage_larger_than_its_record, "storage_size"),
    "compressed_records": (compressed_records, "compressed_record"),
}


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_checkpoint_is_refused_before_it_allocates_and_nothing_is_registered(
    kind: str, tmp_path: Path
) -> None:
    build, reason = HOSTILE[kind]
    hostile = build(tmp_path / f"{kind}.pt")
    assert hostile.stat().st_size < 4096  # each asks for a gigabyte from a few KB
    storage = tmp_path / "storage"
    peak_before = _peak_rss()

    with pytest.raises(errors.WeightsRejected) as refused:
        weights.import_weights(src=hostile, storage=storage)

    assert refused.value.details["reason"] == reason
    assert _peak_rss() - peak_before < 100_000_000  # 1 GB would have been allocated
    assert list((storage / "weights").iterdir()) == []


def test_real_ultralytics_checkpoints_pass_the_check(tmp_path: Path) -> None:
    checkpoint = make_checkpoint(tmp_path / "yolov8n.pt")

    check_checkpoint(path=checkpoint)
    described = weights.import_weights(src=checkpoint, storage=tmp_path / "storage")

    assert described["class_names"] == ["rectangle", "circle"]


# ---- through the GPU service's weights helper ----------------------------------------


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    service = GpuServiceProcess(
        storage=tmp_path_factory.mktemp("weights") / "storage", gpus="1x24GiB"
    )
    yield service.start()
    service.stop()


def _helper(service: GpuServiceProcess) -> psutil.Process:
    """The weights helper: the service's spawned child that is not the resource tracker."""
    for child in psutil.Process(service.pid).children():
        cmdline = " ".join(child.cmdline())
        if "spawn_main" in cmdline and "resource_tracker" not in cmdline:
            return child
    raise AssertionError("no weights helper process")


def _hwm(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("VmHWM")


def test_the_helper_refuses_a_constructor_bomb_without_allocating_it(
    service: GpuServiceProcess,
) -> None:
    (service.storage / "imports").mkdir(exist_ok=True)
    constructor_call(service.storage / "imports" / "bomb.pt")
    assert service.client.get(f"/v1/weights/{'0' * 64}").status_code == 404  # wakes the helper
    helper = _helper(service)
    peak_before = _hwm(helper.pid)

    response = service.client.post("/v1/weights", json={"path": "imports/bomb.pt"})

    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "WEIGHTS_REJECTED"
    assert response.json()["error"]["details"]["reason"] == "forbidden_call"
    assert _helper(service).pid == helper.pid
    assert _hwm(helper.pid) - peak_before < 100_000_000
    assert not list((service.storage / "weights").glob("*.pt"))


def test_a_weights_helper_that_died_is_replaced_and_the_next_import_works(
    service: GpuServiceProcess,
) -> None:
    make_checkpoint(service.storage / "imports" / "good.pt")
    assert service.client.get(f"/v1/weights/{'0' * 64}").status_code == 404
    helper = _helper(service)

    os.kill(helper.pid, signal.SIGKILL)
    helper.wait(timeout=10)
    time.sleep(0.2)  # the pool's manager thread notices the death
    imported = service.client.post("/v1/weights", json={"path": "imports/good.pt"})

    assert imported.status_code == 201, imported.text
    assert _helper(service).pid != helper.pid
    fingerprint = imported.json()["fingerprint"]
    assert service.client.get(f"/v1/weights/{fingerprint}").status_code == 200
    assert service.client.get("/healthz").status_code == 200
