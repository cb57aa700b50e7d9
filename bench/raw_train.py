"""Raw ultralytics training in one process, the training benchmark's baseline:
`python -m bench.raw_train --data D --epochs E --imgsz I --batch B --seed S --project P`.

Offline the same way Carril's workers are (no downloads, no telemetry), and with the
same trainer arguments the train kind passes, minus Carril's callbacks and journal.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.raw_train")
    p.add_argument("--data", required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--imgsz", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--project", required=True)
    p.add_argument("--storage", required=True)
    args = p.parse_args()

    from gpu_service.workloads.offline import make_ultralytics_silent

    make_ultralytics_silent(storage=Path(args.storage))
    from ultralytics import YOLO

    YOLO("yolov8n.yaml").train(
        data=args.data,
        epochs=args.epochs,
        imgsz=args.imgsz,
        batch=args.batch,
        seed=args.seed,
        optimizer="auto",
        patience=100,
        device="cpu",
        workers=0,
        project=args.project,
        name="raw",
        exist_ok=True,
        plots=False,
        verbose=False,
        amp=False,
    )


if __name__ == "__main__":
    main()
