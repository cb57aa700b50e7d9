"""The documents shared with the web app: standard library only, one spelling each."""

from __future__ import annotations

import subprocess
import sys

from gpu_service.contract import ARCHITECTURES, FITNESS_METRIC, METRIC_KEYS, is_job_id
from gpu_service.workloads.train.spec import TrainSpec


def test_the_contract_imports_nothing_but_the_standard_library():
    code = (
        "import sys; import gpu_service.contract;"
        "heavy = {'pydantic', 'fastapi', 'torch', 'ultralytics', 'django'} & set(sys.modules);"
        "inside = sorted(m for m in sys.modules if m.startswith('gpu_service.'));"
        "print(sorted(heavy), inside)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[] ['gpu_service.contract']"


def test_training_accepts_exactly_the_contracts_architectures():
    for name in ARCHITECTURES:
        assert TrainSpec(dataset="d", model=name).model == name
    assert "yolov8n" in ARCHITECTURES
    assert "yolo26x" in ARCHITECTURES


def test_the_fitness_metric_is_one_of_the_canonical_metric_keys():
    assert FITNESS_METRIC in METRIC_KEYS
    assert METRIC_KEYS == ("precision", "recall", "mAP50", "mAP50-95")


def test_a_job_id_is_a_safe_folder_name():
    assert is_job_id("2f1c9a7e-5b6d-4c3e-9f00-0123456789ab")
    for bad in ("", ".", "..", "-x", "a/b", "a.b", "x" * 101, "abc\n"):
        assert not is_job_id(bad)
