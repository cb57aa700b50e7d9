"""DataParallel for ultralytics detection training: one process, all of the job's GPUs.

Ultralytics' own multi-GPU path starts DDP in a child process (see ADR 0004), so the
trainer is given a single device and its model is wrapped here instead. A YOLO batch
is a dict: per-image entries (`img`, file names, shapes) and per-object entries
(`batch_idx`, `cls`, `bboxes`) whose rows point at their image through `batch_idx`.
`split_batch` cuts it by image and renumbers `batch_idx` inside each part; each
replica then runs its forward and its loss on its own device, and `merge_losses` sums
the parts' losses (the criterion already scales each by its image count, so the sum
is on the scale of a whole-batch loss) and averages the loss items for the logs.

Each part's loss is normalised by its own targets, so the sum is close to, not equal
to, the loss of the whole batch on one device; DDP has the same property per rank.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

# Entries with one row per object; everything else with a leading batch dimension is per image.
OBJECT_KEYS = ("batch_idx", "cls", "bboxes")


def split_batch(batch: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """Cut a batch into at most `n` parts of whole images (as `torch.chunk` sizes them)."""
    import torch

    if n < 1:
        raise ValueError("n must be at least 1")
    images = batch["img"].shape[0]
    size = -(-images // n)  # ceil: the same sizes torch.chunk and DataParallel's scatter use
    bounds = [(start, min(start + size, images)) for start in range(0, images, size)]
    owner = batch["batch_idx"].long()
    parts = []
    for start, end in bounds:
        rows = (owner >= start) & (owner < end)
        part: dict[str, Any] = {}
        for key, value in batch.items():
            if key in OBJECT_KEYS:
                part[key] = value[rows]
            elif isinstance(value, torch.Tensor) and value.dim() and value.shape[0] == images:
                part[key] = value[start:end]
            elif isinstance(value, list | tuple) and len(value) == images:
                part[key] = type(value)(value[start:end])
            else:
                part[key] = value
        part["batch_idx"] = part["batch_idx"] - start
        parts.append(part)
    return parts


def move_batch(batch: dict[str, Any], device: Any) -> dict[str, Any]:
    import torch

    return {
        key: value.to(device, non_blocking=True) if isinstance(value, torch.Tensor) else value
        for key, value in batch.items()
    }


def merge_losses(outputs: Sequence[tuple[Any, dict[str, Any]]], *, device: Any) -> tuple[Any, dict]:
    """Sum the parts' losses on `device` (gradients flow back to each replica); average items."""
    import torch

    loss = torch.stack([part_loss.to(device) for part_loss, _ in outputs]).sum(0)
    keys = outputs[0][1].keys()
    items = {
        key: torch.stack([items[key].to(device) for _, items in outputs]).mean(0) for key in keys
    }
    return loss, items


def criterion_on(criterion: Any, device: Any) -> Any:
    """The criterion with its tensors on `device` (a copy unless it is already there)."""
    import torch

    device = torch.device(device)
    if getattr(criterion, "device", None) == device:
        return criterion
    clone = copy.deepcopy(criterion)
    _move_to(clone, device, seen=set())
    return clone


def _move_to(obj: Any, device: Any, *, seen: set[int]) -> None:
    import torch

    if id(obj) in seen:
        return
    seen.add(id(obj))
    for name, value in list(vars(obj).items()):
        if isinstance(value, torch.nn.Module):
            value.to(device)
            _move_to(value, device, seen=seen)
        elif isinstance(value, torch.Tensor):
            setattr(obj, name, value.to(device))
        elif isinstance(value, torch.device):
            setattr(obj, name, device)
        elif type(value).__module__.startswith("ultralytics.utils.") and hasattr(value, "__dict__"):
            _move_to(value, device, seen=seen)


class _ReplicaLoss:
    """One replica's forward and loss, run on the replica's own device by parallel_apply."""

    def __init__(self, replica: Any, criterion: Any) -> None:
        self.replica = replica
        self.criterion = criterion

    def __call__(self, part: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        return self.criterion(self.replica(part["img"]), part)


def parallel_loss(
    module: Any, batch: dict[str, Any], *, devices: Sequence[Any], force_parallel: bool = False
) -> tuple:
    """Split the batch over `devices`, replicate `module`, run forward + loss, merge.

    With distinct CUDA devices this is exactly the training step the wrapper runs; with
    CPU devices (or one GPU named twice) the parts run one after another on the one
    module, which is how the split and merge are tested without two GPUs.
    `force_parallel` takes the replicate/parallel_apply branch for CUDA devices even
    when one GPU is named twice (`make gpu-check` on a one-GPU host).
    """
    import torch
    from torch.nn.parallel import parallel_apply, replicate

    if getattr(module, "criterion", None) is None:
        module.criterion = module.init_criterion()  # the trainer calls criterion.update() on it
    parts = split_batch(batch, len(devices))
    devices = [torch.device(d) for d in devices][: len(parts)]
    parts = [move_batch(part, device) for part, device in zip(parts, devices, strict=True)]
    criteria = [criterion_on(module.criterion, device) for device in devices]
    distinct = len(set(devices)) == len(devices)
    if len(devices) > 1 and (distinct or force_parallel) and all(d.type == "cuda" for d in devices):
        replicas = replicate(module, devices)
        calls = [_ReplicaLoss(r, c) for r, c in zip(replicas, criteria, strict=True)]
        outputs = parallel_apply(calls, [(p,) for p in parts], devices=devices)
    else:
        outputs = [_ReplicaLoss(module, c)(p) for c, p in zip(criteria, parts, strict=True)]
    return merge_losses(outputs, device=devices[0])


def wrap_for_devices(model: Any, *, devices: Sequence[int]) -> Any:
    """The model as training should see it: wrapped for 2+ GPUs, untouched otherwise."""
    if len(devices) < 2:
        return model
    return _detection_data_parallel_class()(model, device_ids=list(devices))


def _detection_data_parallel_class() -> type:
    import torch

    class DetectionDataParallel(torch.nn.DataParallel):
        """`torch.nn.DataParallel` whose scatter understands YOLO batches."""

        def forward(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(batch, dict):  # plain tensors: predictions on the first GPU
                return self.module(batch, *args, **kwargs)
            devices = [torch.device("cuda", index) for index in self.device_ids]
            return parallel_loss(self.module, batch, devices=devices)

    return DetectionDataParallel
