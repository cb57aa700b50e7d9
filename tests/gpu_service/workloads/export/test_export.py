"""Exports on the CPU with real ultralytics, ONNX Runtime and OpenVINO."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from gpu_service import errors
from gpu_service.contract import ExportResult
from gpu_service.workloads import exports, weights
from gpu_service.workloads.export.run import check_parity, export_job
from gpu_service.workloads.export.spec import ExportSpec, check_export


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ultralytics import YOLO

    path = tmp_path_factory.mktemp("export-ckpt") / "shapes.pt"
    model = YOLO("yolov8n.yaml")
    model.model.names = {i: f"class-{i}" for i in range(80)}
    model.save(str(path))
    return path


@pytest.fixture
def fingerprint(storage: Path, checkpoint: Path) -> str:
    return weights.import_weights(src=checkpoint, storage=storage)["fingerprint"]


def _spec(fingerprint: str, **overrides) -> dict:
    spec = {"model": fingerprint, "format": "onnx", "imgsz": 64}
    spec.update(overrides)
    return ExportSpec.model_validate(spec).model_dump()


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["onnx", "openvino"])
def test_an_export_is_stored_with_its_fingerprint_manifest_and_passed_parity(
    make_context, storage: Path, fingerprint: str, fmt: str
) -> None:
    ctx = make_context(kind="export", job_id=f"export-{fmt}", spec=_spec(fingerprint, format=fmt))

    result = export_job(ctx=ctx)

    TypeAdapter(ExportResult).validate_python(result)
    manifest = result["export"]
    artifact = storage / manifest["artifact"]
    assert manifest["artifact"].startswith(f"exports/{manifest['fingerprint']}/")
    assert not Path(manifest["artifact"]).is_absolute()
    assert exports.fingerprint_artifact(path=artifact) == manifest["fingerprint"]
    assert manifest["source_fingerprint"] == fingerprint
    assert (manifest["format"], manifest["imgsz"]) == (fmt, 64)
    assert manifest["tool_versions"]["ultralytics"]
    assert ("onnxruntime" if fmt == "onnx" else "openvino") in manifest["tool_versions"]
    assert (manifest["opset"] is not None) == (fmt == "onnx")
    assert manifest["parity"]["passed"] is True
    assert manifest["parity"]["images"] == 2
    stored = json.loads((storage / result["manifest_path"]).read_text())
    assert stored == manifest
    assert str(storage) not in json.dumps(stored)
    assert exports.list_manifests(source=fingerprint, storage=storage) == [manifest]
    # nothing was written into the weights store
    assert sorted(p.suffix for p in (storage / "weights").iterdir()) == [".json", ".pt"]

    # Box for box: even the untrained network's faint boxes agree with the .pt model.
    from ultralytics import YOLO

    low = check_parity(
        reference=YOLO(str(weights.verified_path(fingerprint=fingerprint, storage=storage))),
        exported=YOLO(str(artifact), task="detect"),
        images=_assets(),
        imgsz=64,
        device="cpu",
        conf=1e-5,
    )
    assert low["boxes_reference"] >= 3
    assert low["matched_fraction"] >= 0.95
    assert low["max_conf_diff"] < 1e-3


def _assets() -> list[Path]:
    from ultralytics.utils import ASSETS

    return [Path(ASSETS) / "bus.jpg"]


def test_int8_needs_a_dataset_and_a_format_that_has_it(fingerprint: str) -> None:
    with pytest.raises(ValueError, match="int8"):
        ExportSpec.model_validate({"model": fingerprint, "format": "onnx", "int8": True})
    with pytest.raises(ValueError, match="dataset"):
        ExportSpec.model_validate({"model": fingerprint, "format": "openvino", "int8": True})


def test_a_format_whose_package_is_missing_is_refused_at_submit(
    storage: Path, fingerprint: str, monkeypatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "openvino" else real(name)
    )
    spec = ExportSpec.model_validate({"model": fingerprint, "format": "openvino"})

    with pytest.raises(errors.ValidationFailed, match="openvino"):
        check_export(spec, storage)


def test_an_unknown_model_is_refused_at_submit(storage: Path) -> None:
    spec = ExportSpec.model_validate({"model": "a" * 64, "format": "onnx"})

    with pytest.raises(errors.NotFound):
        check_export(spec, storage)
