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


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["onnx", "openvino"])
def test_an_export_serves_inference_whose_detections_match_the_pt_model(
    make_context, storage: Path, fingerprint: str, fmt: str
) -> None:
    from ultralytics.utils import ASSETS

    from gpu_service.workloads.export.parity import compare
    from gpu_service.workloads.infer import run as inference
    from gpu_service.workloads.infer.run import infer_job
    from gpu_service.workloads.infer.spec import InferSpec, check_infer

    exported = export_job(
        ctx=make_context(kind="export", job_id="exp", spec=_spec(fingerprint, format=fmt))
    )["export"]
    (storage / "uploads").mkdir()
    for name in ("bus.jpg", "zidane.jpg"):
        (storage / "uploads" / name).write_bytes((Path(ASSETS) / name).read_bytes())
    runs = {}
    inference._MODELS.clear()
    for served in ("pt", fmt):
        spec = InferSpec.model_validate(
            {
                "model": fingerprint,
                "format": served,
                "images": ["uploads/bus.jpg", "uploads/zidane.jpg"],
                "conf": 0.0,
                "imgsz": 64,
                "max_det": 5,
            }
        )
        check_infer(spec, storage)
        runs[served] = infer_job(
            ctx=make_context(kind="infer", job_id=f"infer-{served}", spec=spec.model_dump())
        )

    assert runs[fmt]["format"] == fmt
    assert runs[fmt]["export"] == exported["fingerprint"]
    assert runs["pt"]["export"] is None
    assert inference.cached_fingerprints() == [fingerprint, exported["fingerprint"]]

    def boxes(run: dict) -> list[list[tuple]]:
        return [
            [(d["class_id"], d["confidence"], *d["box_xyxy"]) for d in image["detections"]]
            for image in run["images"]
        ]

    same = compare(boxes(runs["pt"]), boxes(runs[fmt]), conf=0.0, tolerance=1e-3)
    assert same["boxes_reference"] == 10
    assert same["matched_fraction"] >= 0.9
    assert same["max_conf_diff"] < 1e-3


def test_an_export_that_failed_parity_cannot_serve(storage: Path, fingerprint: str) -> None:
    from gpu_service.storage import write_json_atomically

    failed = "f" * 64
    folder = storage / "exports" / failed
    folder.mkdir(parents=True)
    manifest = {
        "fingerprint": failed,
        "format": "onnx",
        "source_fingerprint": fingerprint,
        "parity": {"passed": False},
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    write_json_atomically(folder / "manifest.json", manifest)

    with pytest.raises(errors.NotFound, match="passed its parity"):
        exports.serving_export(source=fingerprint, fmt="onnx", storage=storage)
    with pytest.raises(errors.ValidationFailed, match="failed its parity"):
        exports.serving_export(source=fingerprint, fmt="onnx", storage=storage, fingerprint=failed)


def test_an_int8_openvino_export_without_nncf_is_refused_at_submit_naming_it(
    storage: Path, fingerprint: str, shapes_dataset: Path, monkeypatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "nncf" else real(name)
    )
    spec = ExportSpec.model_validate(
        {"model": fingerprint, "format": "openvino", "int8": True, "dataset": "datasets/shapes"}
    )

    with pytest.raises(errors.ValidationFailed, match="nncf"):
        check_export(spec, storage)
