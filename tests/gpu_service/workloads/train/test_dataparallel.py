"""The DataParallel split and merge, on the CPU, against a real ultralytics batch and loss."""

from __future__ import annotations

import pytest

from gpu_service.workloads.train import dataparallel


@pytest.fixture(scope="module")
def real_batch(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from ultralytics.cfg import get_cfg
    from ultralytics.data import build_dataloader, build_yolo_dataset
    from ultralytics.data.utils import check_det_dataset

    from tests.gpu_service.workloads.support import make_shapes_dataset

    root = make_shapes_dataset(tmp_path_factory.mktemp("dp") / "shapes", train=8, val=2)
    cfg = get_cfg(overrides={"imgsz": 64, "mosaic": 0.0, "fliplr": 0.0})
    data = check_det_dataset(str(root / "data.yaml"))
    dataset = build_yolo_dataset(cfg, data["train"], batch=7, data=data, mode="train", stride=32)
    loader = build_dataloader(dataset, batch=7, workers=0, shuffle=False, rank=-1)
    batch = next(iter(loader))
    batch["img"] = batch["img"].float() / 255
    return batch


@pytest.fixture(scope="module")
def model():
    from ultralytics.cfg import get_cfg
    from ultralytics.nn.tasks import DetectionModel

    net = DetectionModel("yolov8n.yaml", nc=2, verbose=False)
    net.args = get_cfg(overrides={"imgsz": 64})
    return net


def test_it_splits_a_batch_by_image_and_renumbers_each_parts_boxes(real_batch: dict) -> None:
    import torch

    parts = dataparallel.split_batch(real_batch, 3)

    assert [p["img"].shape[0] for p in parts] == [3, 3, 1]
    assert [len(p["im_file"]) for p in parts] == [3, 3, 1]
    offset = 0
    rebuilt_idx, rebuilt_boxes = [], []
    for part in parts:
        images = part["img"].shape[0]
        assert torch.equal(part["img"], real_batch["img"][offset : offset + images])
        assert part["batch_idx"].numel() == part["cls"].shape[0] == part["bboxes"].shape[0]
        assert part["batch_idx"].min() >= 0
        assert part["batch_idx"].max() < images
        rebuilt_idx.append(part["batch_idx"] + offset)
        rebuilt_boxes.append(part["bboxes"])
        offset += images
    assert torch.equal(torch.cat(rebuilt_idx), real_batch["batch_idx"])
    assert torch.equal(torch.cat(rebuilt_boxes), real_batch["bboxes"])


def test_it_never_makes_an_empty_part(real_batch: dict) -> None:
    small = dataparallel.split_batch(real_batch, 7)
    tiny = dataparallel.split_batch(dataparallel.split_batch(real_batch, 4)[0], 8)

    assert [p["img"].shape[0] for p in small] == [1] * 7
    assert [p["img"].shape[0] for p in tiny] == [1, 1]


def test_the_parallel_loss_is_the_sum_of_each_parts_own_loss(real_batch: dict, model) -> None:
    import torch

    model.train()
    loss, items = dataparallel.parallel_loss(model, real_batch, devices=["cpu", "cpu"])
    parts = dataparallel.split_batch(real_batch, 2)
    per_part = [model.criterion(model(part["img"]), part) for part in parts]

    assert torch.allclose(loss, sum(p[0] for p in per_part))
    assert set(items) == {"box_loss", "cls_loss", "dfl_loss"}
    for key in items:
        assert torch.allclose(items[key], (per_part[0][1][key] + per_part[1][1][key]) / 2)
    loss.sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    model.zero_grad()


def test_with_one_part_the_parallel_loss_is_the_whole_batch_loss(real_batch: dict, model) -> None:
    import torch

    model.eval()  # BatchNorm on running statistics: the two passes see the same network
    whole, whole_items = model.loss(real_batch)
    single, single_items = dataparallel.parallel_loss(model, real_batch, devices=["cpu"])

    assert torch.allclose(single, whole)
    assert all(torch.allclose(single_items[k], whole_items[k]) for k in whole_items)
    model.train()


def test_one_gpu_or_none_means_no_wrapper(model) -> None:
    assert dataparallel.wrap_for_devices(model, devices=[]) is model
    assert dataparallel.wrap_for_devices(model, devices=[0]) is model


def test_a_criterion_moved_to_another_device_keeps_no_tensor_behind(model) -> None:
    import torch

    model.criterion = model.init_criterion()
    moved = dataparallel.criterion_on(model.criterion, torch.device("meta"))

    assert moved is not model.criterion
    assert moved.device == torch.device("meta")
    assert moved.proj.device.type == "meta"
    assert model.criterion.proj.device.type == "cpu"
