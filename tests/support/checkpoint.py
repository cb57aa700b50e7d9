"""A small, untrained ultralytics checkpoint for tests, made in a child process.

A child process keeps ultralytics (its settings file, its imports, its torch threads) out
of the test process; the environment keeps it offline.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_MAKE = """
import sys
from ultralytics import YOLO
model = YOLO("yolov8n.yaml")
model.model.names = {0: "rectangle", 1: "circle"}
model.save(sys.argv[1])
"""


def make_checkpoint(path: Path) -> Path:
    """Write an untrained yolov8n checkpoint (two class names) to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "YOLO_CONFIG_DIR": str(path.parent / ".ultralytics"),
        "YOLO_OFFLINE": "1",
        "YOLO_AUTOINSTALL": "false",
        "PYTHONPATH": str(ROOT),
    }
    subprocess.run([sys.executable, "-c", _MAKE, str(path)], env=env, check=True, timeout=300)
    return path
