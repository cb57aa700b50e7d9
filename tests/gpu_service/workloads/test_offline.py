"""Nothing phones home: a training (with its evaluation), an inference, an evaluation,
exports to ONNX and OpenVINO and inference on them, with the network made to fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_service.workloads.offline import offline_environment

ROOT = Path(__file__).resolve().parents[3]

# Runs in a fresh interpreter so the guard is in place before ultralytics is imported.
SCRIPT = r"""
import ipaddress, json, socket, sys
from pathlib import Path

attempts = []

def _loopback(host):
    if host in (None, "", "localhost"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False

def _refuse(what, host):
    attempts.append(f"{what} {host}")
    raise OSError(f"network disabled by test: {what} {host}")

_getaddrinfo = socket.getaddrinfo
_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex

def getaddrinfo(host, *args, **kwargs):
    if not _loopback(host):
        _refuse("resolve", host)
    return _getaddrinfo(host, *args, **kwargs)

def connect(self, address):
    if self.family != socket.AF_UNIX and not _loopback(address[0]):
        _refuse("connect", address[0])
    return _connect(self, address)

def connect_ex(self, address):
    if self.family != socket.AF_UNIX and not _loopback(address[0]):
        _refuse("connect", address[0])
    return _connect_ex(self, address)

socket.getaddrinfo = getaddrinfo
socket.socket.connect, socket.socket.connect_ex = connect, connect_ex

from gpu_service.workloads.infer.run import infer_job
from gpu_service.workloads.infer.spec import INFER
from gpu_service.workloads.train.run import train_job
from gpu_service.workloads.train.spec import TRAIN
from tests.gpu_service.workloads.support import FakeJobContext, make_shapes_dataset

storage = Path(sys.argv[1])
make_shapes_dataset(storage / "datasets" / "shapes")
train = FakeJobContext(storage=storage, job_id="train-1", spec=TRAIN.spec_model.model_validate(
    {"dataset": "datasets/shapes", "epochs": 1, "imgsz": 64, "batch": 4, "workers": 0}
).model_dump())
trained = train_job(ctx=train)
infer = FakeJobContext(storage=storage, job_id="infer-1", kind="infer", spec={
    "model": trained["weights"]["fingerprint"],
    "images": ["datasets/shapes/images/val/000.jpg"], "imgsz": 64, "conf": 0.0, "max_det": 3,
})
inferred = infer_job(ctx=infer)
from gpu_service.workloads.evaluate.run import evaluate_job
evaluate = FakeJobContext(storage=storage, job_id="evaluate-1", kind="evaluate", spec={
    "model": trained["weights"]["fingerprint"], "dataset": "datasets/shapes"})
evaluate_job(ctx=evaluate)
documents = {}
for ctx in (train, evaluate):
    document = json.loads((ctx.job_dir / "evaluation" / "evaluation.json").read_text())
    documents[ctx.job_id] = {
        "plots": [p for p in document["plots"] if (ctx.job_dir / p).is_file()],
        "samples": [s["artifact"] for s in document["samples"]
                    if (ctx.job_dir / s["artifact"]).is_file()],
    }
from gpu_service.workloads.export.run import export_job
served = {}
# The INT8 export last: NNCF calibrates on the dataset, offline and without telemetry.
for fmt, int8 in (("onnx", False), ("openvino", False), ("openvino", True)):
    name = fmt + ("-int8" if int8 else "")
    exported = export_job(ctx=FakeJobContext(storage=storage, job_id=f"export-{name}",
        kind="export", spec={"model": trained["weights"]["fingerprint"], "format": fmt,
        "imgsz": 64, "dataset": "datasets/shapes", "int8": int8}))
    assert exported["export"]["parity"]["passed"], exported
    assert exported["export"]["int8"] is int8
    served[name] = infer_job(ctx=FakeJobContext(storage=storage, job_id=f"infer-{name}",
        kind="infer", spec={**infer.spec, "format": fmt,
        "export": exported["export"]["fingerprint"]}))["format"]
print(json.dumps({"attempts": attempts, "images": len(inferred["images"]), "served": served,
    "evaluations": documents}))
"""


@pytest.mark.slow
def test_training_evaluation_inference_and_exports_pass_with_non_loopback_network_refused(
    storage: Path,
) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("YOLO_", "ULTRALYTICS_", "HF_", "PYTEST_"))
    }
    env["PYTHONPATH"] = str(ROOT)

    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(storage)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert run.returncode == 0, run.stderr[-4000:]
    outcome = json.loads(run.stdout.strip().splitlines()[-1])
    assert outcome["images"] == 1
    assert outcome["served"] == {
        "onnx": "onnx",
        "openvino": "openvino",
        "openvino-int8": "openvino",
    }
    assert outcome["attempts"] == []
    for job_id in ("train-1", "evaluate-1"):  # ultralytics' plots drew their text offline
        plots = {Path(plot).name for plot in outcome["evaluations"][job_id]["plots"]}
        assert {"confusion_matrix.png", "BoxPR_curve.png", "val_batch0_pred.jpg"} <= plots
        assert len(outcome["evaluations"][job_id]["samples"]) == 4
    assert (storage / "ultralytics" / "Ultralytics" / "settings.json").is_file()


def test_the_worker_environment_switches_off_hub_telemetry_downloads_and_pip(
    storage: Path,
) -> None:
    env = offline_environment(storage=storage)

    assert env["YOLO_OFFLINE"] == "1"
    assert env["YOLO_AUTOINSTALL"] == "false"
    assert env["ULTRALYTICS_SAFE_LOAD"] == "1"
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["NNCF_CI"] == "1"  # NNCF's telemetry is a stub
    assert env["YOLO_CONFIG_DIR"] == str(storage / "ultralytics")


def test_silencing_turns_off_sync_and_every_integration_in_the_settings(storage: Path) -> None:
    from gpu_service.workloads.offline import make_ultralytics_silent

    make_ultralytics_silent(storage=storage)
    from ultralytics.utils import SETTINGS

    assert SETTINGS["sync"] is False
    assert not any(SETTINGS[k] for k in ("clearml", "comet", "dvc", "mlflow", "wandb"))
    settings_file = json.loads(Path(SETTINGS.file).read_text())
    assert settings_file["sync"] is False
