"""Fixtures for the workload tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.gpu_service.workloads.support import FakeJobContext, make_shapes_dataset


@pytest.fixture(scope="session", autouse=True)
def _ultralytics_offline(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Before anything imports ultralytics: its settings and switches come from here.
    config_dir = tmp_path_factory.mktemp("ultralytics-config")
    os.environ["YOLO_CONFIG_DIR"] = str(config_dir)
    os.environ["YOLO_OFFLINE"] = "1"
    os.environ["YOLO_AUTOINSTALL"] = "false"
    os.environ["ULTRALYTICS_SAFE_LOAD"] = "1"


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    root = tmp_path / "storage"
    (root / "jobs").mkdir(parents=True)
    return root


@pytest.fixture
def shapes_dataset(storage: Path) -> Path:
    return make_shapes_dataset(storage / "datasets" / "shapes")


@pytest.fixture
def make_context(storage: Path):
    def make(**kwargs: Any) -> FakeJobContext:
        return FakeJobContext(storage=storage, **kwargs)

    return make
