from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from gpu_service import errors
from gpu_service.workloads import weights


class _ShellOnLoad:
    """Unpickling this runs a shell command that creates a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(scope="module")
def yolo_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ultralytics import YOLO

    path = tmp_path_factory.mktemp("ckpt") / "yolov8n-shapes.pt"
    model = YOLO("yolov8n.yaml")
    model.model.names = {0: "rectangle", 1: "circle"}
    model.save(str(path))
    return path


def test_it_imports_a_checkpoint_under_its_sha256_and_reads_what_it_is(
    storage: Path, yolo_checkpoint: Path
) -> None:
    src = storage / "uploads" / "weights" / "a.pt"
    src.parent.mkdir(parents=True)
    src.write_bytes(yolo_checkpoint.read_bytes())

    described = weights.import_weights(src=src, storage=storage)

    assert described["fingerprint"] == weights.fingerprint_file(path=src)
    assert (storage / "weights" / f"{described['fingerprint']}.pt").read_bytes() == src.read_bytes()
    assert described["task"] == "detect"
    assert described["architecture"] == "yolov8n"
    assert described["class_names"] == ["rectangle", "circle"]
    assert described["size_bytes"] == src.stat().st_size
    again = weights.describe_weights(fingerprint=described["fingerprint"], storage=storage)
    assert again == described


@pytest.mark.parametrize("packaging", ["torch_zip", "raw_pickle"])
def test_it_refuses_a_pickle_that_would_run_a_shell_command_without_running_it(
    storage: Path, tmp_path: Path, packaging: str
) -> None:
    import torch

    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    payload = {"model": _ShellOnLoad(marker), "train_args": {}}
    if packaging == "torch_zip":
        torch.save(payload, evil)
    else:
        evil.write_bytes(pickle.dumps(payload))

    with pytest.raises(errors.WeightsRejected) as refused:
        weights.import_weights(src=evil, storage=storage)

    assert refused.value.code == "WEIGHTS_REJECTED"
    assert not marker.exists()
    assert not list((storage / "weights").glob("*.pt"))


def test_it_refuses_a_file_that_is_not_a_checkpoint(storage: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")

    with pytest.raises(errors.WeightsRejected):
        weights.import_weights(src=junk, storage=storage)


def test_it_refuses_to_load_weights_whose_bytes_no_longer_match_the_fingerprint(
    storage: Path, yolo_checkpoint: Path
) -> None:
    fingerprint = weights.import_weights(src=yolo_checkpoint, storage=storage)["fingerprint"]
    stored = storage / "weights" / f"{fingerprint}.pt"
    stored.write_bytes(stored.read_bytes() + b"tampered")

    with pytest.raises(errors.WeightsRejected, match="fingerprint"):
        weights.load_model(fingerprint=fingerprint, storage=storage)


def test_it_loads_weights_by_fingerprint_only(storage: Path, yolo_checkpoint: Path) -> None:
    fingerprint = weights.import_weights(src=yolo_checkpoint, storage=storage)["fingerprint"]

    model = weights.load_model(fingerprint=fingerprint, storage=storage)

    assert model.names == {0: "rectangle", 1: "circle"}
    with pytest.raises(errors.ValidationFailed):
        weights.load_model(fingerprint=str(yolo_checkpoint), storage=storage)
    with pytest.raises(errors.NotFound):
        weights.load_model(fingerprint="0" * 64, storage=storage)
