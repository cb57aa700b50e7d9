"""The train spec and its submit-time checks (no torch needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from gpu_service import errors
from gpu_service.workloads.train.spec import TRAIN, TrainSpec, optimizer_and_lr


def _errors_for(**spec) -> set[str]:
    with pytest.raises(ValidationError) as refused:
        TrainSpec.model_validate({"dataset": "datasets/x", **spec})
    return {".".join(str(p) for p in e["loc"]) for e in refused.value.errors()}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("epochs", 0),
        ("epochs", 1001),
        ("imgsz", 100),
        ("imgsz", 4096),
        ("batch", 0),
        ("lr0", 0),
        ("lr0", 2),
        ("optimizer", "Lion"),
        ("patience", -1),
        ("mosaic", 1.5),
        ("fliplr", -0.1),
        ("hsv_h", 2),
        ("scale", 1.0),
        ("degrees", 181),
        ("degrees", float("nan")),
        ("seeds", []),
        ("seeds", [1, 2, 3, 4, 5, 6]),
        ("seeds", [7, 7]),
        ("model", "resnet50"),
        ("model", "../../etc/passwd"),
        ("surprise", 1),
    ],
)
def test_it_refuses_an_invalid_spec_naming_the_field(field: str, value) -> None:
    assert field in _errors_for(**{field: value})


def test_its_defaults_are_one_seed_of_42_on_yolov8n() -> None:
    spec = TrainSpec.model_validate({"dataset": "datasets/x"})

    assert spec.seeds == [42]
    assert spec.model == "yolov8n"
    assert optimizer_and_lr(spec) == ("auto", None)


def test_a_given_learning_rate_is_honoured_by_choosing_sgd() -> None:
    spec = TrainSpec.model_validate({"dataset": "datasets/x", "lr0": 0.02})

    assert optimizer_and_lr(spec) == ("SGD", 0.02)


def test_the_check_refuses_a_dataset_outside_storage_or_without_data_yaml(
    storage: Path, shapes_dataset: Path, tmp_path: Path
) -> None:
    TRAIN.check(TrainSpec(dataset="datasets/shapes"), storage)

    with pytest.raises(errors.ValidationFailed, match="dataset"):
        TRAIN.check(TrainSpec(dataset="../../outside"), storage)
    (storage / "datasets" / "empty").mkdir()
    with pytest.raises(errors.FileMissing, match="dataset") as missing:
        TRAIN.check(TrainSpec(dataset="datasets/empty"), storage)
    assert missing.value.details["field"] == "dataset"


def test_the_check_refuses_weights_that_are_not_registered(
    storage: Path, shapes_dataset: Path
) -> None:
    spec = TrainSpec(dataset="datasets/shapes", model="a" * 64)

    with pytest.raises(errors.NotFound) as missing:
        TRAIN.check(spec, storage)
    assert missing.value.details["field"] == "model"


def test_the_memory_estimate_grows_with_batch_and_image_size() -> None:
    small = TRAIN.memory_estimate_mib(TrainSpec(dataset="d", batch=8, imgsz=320))
    large = TRAIN.memory_estimate_mib(TrainSpec(dataset="d", batch=32, imgsz=640))

    assert 0 < small < large


def test_the_api_process_imports_neither_torch_nor_ultralytics() -> None:
    import subprocess

    code = (
        "import sys; import gpu_service.kinds, gpu_service.api.app;"
        "sys.exit(1 if {'torch', 'ultralytics'} & set(sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_the_check_refuses_a_data_yaml_that_would_download_or_run_code(
    storage: Path, shapes_dataset: Path
) -> None:
    data_yaml = shapes_dataset / "data.yaml"
    data_yaml.write_text(data_yaml.read_text() + "download: import os; os.system('true')\n")

    with pytest.raises(errors.ValidationFailed, match="download"):
        TRAIN.check(TrainSpec(dataset="datasets/shapes"), storage)
