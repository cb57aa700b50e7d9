"""Raw ultralytics training in one process, the training benchmark's baseline:
`python -m bench.raw_train --data D --epochs E --imgsz I --batch B --seed S --project P`.

The same trainer class (gpu_service.workloads.train.trainer.make_trainer: ultralytics'
DetectionTrainer, one device) with the same arguments the train kind passes, built
once from the architecture's yaml, minus Carril's callbacks and journal. Offline the
same way Carril's workers are. Prints one JSON line: when the trainer was constructed
(epoch seconds) and where its weights are; the benchmark takes their mtime as the end.
"""

from __future__ import annotations

import argparse
import json
import os
import time
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
    p.add_argument("--nice", type=int, default=0, help="niceness to add (as Carril's workers)")
    args = p.parse_args()
    if args.nice:
        os.nice(args.nice)

    from gpu_service.workloads.offline import make_ultralytics_silent

    make_ultralytics_silent(storage=Path(args.storage))
    # What make_trainer imports, before the clock starts: Carril's warm worker has it
    # imported already, and imports are not what this benchmark compares.
    import ultralytics.models.yolo.detect  # noqa: F401

    from gpu_service.workloads.train.trainer import make_trainer

    overrides = {  # as gpu_service.workloads.train.run._run_seed passes them on a CPU
        "model": "yolov8n.yaml",
        "data": args.data,
        "epochs": args.epochs,
        "imgsz": args.imgsz,
        "batch": args.batch,
        "optimizer": "auto",
        "patience": 100,
        "seed": args.seed,
        "device": "cpu",
        "workers": 0,
        "project": args.project,
        "name": "raw",
        "exist_ok": True,
        "plots": False,
        "verbose": False,
        "amp": False,
    }
    constructed = time.time()
    trainer = make_trainer(overrides=overrides, devices=[])
    trainer.train()
    weights = Path(args.project) / "raw" / "weights" / "best.pt"
    print(json.dumps({"constructed": constructed, "weights": str(weights)}))


if __name__ == "__main__":
    main()
