"""The ultralytics detection trainer as Carril runs it, and the callbacks that report it.

The trainer is always handed one device (a single GPU ordinal or "cpu"), so
ultralytics never sees a device list and never starts its DDP child process. With two
or more GPUs the model is wrapped in `DetectionDataParallel` after ultralytics has set
it up (EMA and optimizer hold the plain model's parameters, which the wrapper shares).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from gpu_service import errors
from gpu_service.workloads.base import JobContext
from gpu_service.workloads.simulated_oom import install_faults_in_forward
from gpu_service.workloads.train.dataparallel import wrap_for_devices

# What ultralytics calls each metric -> what the journal calls it.
VAL_METRICS = {
    "metrics/precision(B)": "precision",
    "metrics/recall(B)": "recall",
    "metrics/mAP50(B)": "mAP50",
    "metrics/mAP50-95(B)": "mAP50-95",
}


def make_trainer(*, overrides: dict[str, Any], devices: list[int]) -> Any:
    from ultralytics.models.yolo.detect import DetectionTrainer

    class CarrilDetectionTrainer(DetectionTrainer):
        def _setup_train(self) -> None:
            super()._setup_train()
            self.model = wrap_for_devices(self.model, devices=devices)

        def save_model(self) -> Any:
            # Ultralytics rewrites last.pt and best.pt in place, and a stop in the middle
            # of that write (a restart of the service) left a truncated checkpoint, so
            # the resumed attempt had to start the seed over. Write beside, then rename.
            last, best = self.last, self.best
            partial = {last: last.with_name(last.name + ".partial")}
            partial[best] = best.with_name(best.name + ".partial")
            self.last, self.best = partial[last], partial[best]
            try:
                saved = super().save_model()
            finally:
                self.last, self.best = last, best
            for final, written in partial.items():
                if written.exists():
                    os.replace(written, final)
            return saved

    return CarrilDetectionTrainer(overrides=overrides)


@dataclass
class SeedReporter:
    """Turns one seed's trainer callbacks into progress, epoch records and cancels."""

    ctx: JobContext
    seed: int
    seed_index: int  # 0-based
    seeds: int
    epochs: int
    batch_requested: int
    batch_in_epoch: int = 0
    epoch_open: bool = False
    epochs_run: int = 0
    batch_effective: int | None = None
    final_metrics: dict[str, float] = field(default_factory=dict)

    def attach(self, trainer: Any) -> None:
        trainer.add_callback("on_train_start", self.on_train_start)
        trainer.add_callback("on_train_epoch_start", self.on_train_epoch_start)
        trainer.add_callback("on_train_batch_end", self.on_train_batch_end)
        trainer.add_callback("on_train_epoch_end", self.on_train_epoch_end)
        trainer.add_callback("on_fit_epoch_end", self.on_fit_epoch_end)
        trainer.add_callback("on_train_end", self.on_train_end)

    def fraction(self, *, epoch: int, batch: int, batches: int) -> float:
        within_seed = (epoch + batch / max(batches, 1)) / self.epochs
        return min((self.seed_index + within_seed) / self.seeds, 1.0)

    def report(self, trainer: Any, *, stage: str) -> None:
        batches = len(trainer.train_loader)
        self.ctx.progress(
            stage=stage,
            seed=self.seed_index + 1,
            seeds=self.seeds,
            epoch=trainer.epoch + 1,
            epochs=self.epochs,
            batch=self.batch_in_epoch,
            batches=batches,
            fraction=self.fraction(epoch=trainer.epoch, batch=self.batch_in_epoch, batches=batches),
        )

    def on_train_start(self, trainer: Any) -> None:
        trainer.epoch = trainer.start_epoch
        if self.ctx.runtime == "simulated":
            # Simulated faults come from the forward pass, where a real OOM comes from, so
            # ultralytics' own first-epoch retry sees them (trainer.model is final here).
            install_faults_in_forward(
                trainer.model,
                fault_point=self.ctx.fault_point,
                step=lambda: self.forward_step(trainer),
            )
        if trainer.start_epoch:
            self.ctx.logger.info(
                "seed %s resumes at epoch %s of %s", self.seed, trainer.start_epoch + 1, self.epochs
            )
        self.report(trainer, stage="training")

    def on_train_epoch_start(self, trainer: Any) -> None:
        self.batch_in_epoch = 0
        if trainer.batch_size != (self.batch_effective or self.batch_requested):
            # Ultralytics halves the batch after an out-of-memory in the first epoch.
            self.batch_effective = trainer.batch_size
            self.ctx.logger.warning(
                "batch size lowered by ultralytics from %s to %s after running out of memory",
                self.batch_requested,
                trainer.batch_size,
            )
            self.ctx.set_metrics(batch_effective=trainer.batch_size)

    def forward_step(self, trainer: Any) -> int | None:
        """The job-wide number of the training step whose forward pass is starting
        (1-based, counting every seed's epochs); None for passes in eval mode."""
        if not trainer.model.training:
            return None
        batches = len(trainer.train_loader)
        return ((self.seed_index * self.epochs) + trainer.epoch) * batches + self.batch_in_epoch + 1

    def on_train_batch_end(self, trainer: Any) -> None:
        self.batch_in_epoch += 1
        if self.ctx.should_stop():
            # trainer.stop alone would still validate and save; a cancelled seed is
            # thrown away, so leave the loop now.
            trainer.stop = True
            raise errors.Cancelled(
                details={
                    "seed": self.seed,
                    "epoch": trainer.epoch + 1,
                    "batch": self.batch_in_epoch,
                }
            )
        self.report(trainer, stage="training")

    def on_train_epoch_end(self, trainer: Any) -> None:
        self.epoch_open = True
        self.report(trainer, stage="validating")

    def on_fit_epoch_end(self, trainer: Any) -> None:
        if not self.epoch_open:
            return  # ultralytics' final validation of best.pt; read in on_train_end
        self.epoch_open = False
        self.epochs_run = trainer.epoch + 1
        losses = trainer.label_loss_items(trainer.tloss, prefix="train") if trainer.tloss else {}
        record: dict[str, Any] = {"seed": self.seed, "epoch": trainer.epoch + 1}
        for name, value in losses.items():
            record[name.removeprefix("train/")] = round(float(value), 6)
        for source, name in VAL_METRICS.items():
            if source in (trainer.metrics or {}):
                record[name] = round(float(trainer.metrics[source]), 6)
        if trainer.fitness is not None:
            record["fitness"] = round(float(trainer.fitness), 6)
        record["batch"] = trainer.batch_size
        self.ctx.epoch_metrics(record)
        self.ctx.logger.info("seed %s epoch %s: %s", self.seed, trainer.epoch + 1, record)

    def on_train_end(self, trainer: Any) -> None:
        metrics = trainer.metrics or {}
        self.final_metrics = {
            name: round(float(metrics[source]), 6)
            for source, name in VAL_METRICS.items()
            if source in metrics
        }
        self.batch_effective = trainer.batch_size
