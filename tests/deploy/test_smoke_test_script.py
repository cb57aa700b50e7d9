"""deploy/smoke_test.py's own parts: the dataset it generates is a valid YOLO dataset
whose labels match the pixels, its multipart bodies parse, and its detections check
refuses malformed answers."""

from __future__ import annotations

import email
import importlib.util
import io
import sys
import zipfile

import pytest
import yaml
from PIL import Image

from tests.deploy.deploy_files import ROOT


def smoke_module():
    spec = importlib.util.spec_from_file_location("smoke_test", ROOT / "deploy" / "smoke_test.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


smoke = smoke_module()


def test_the_generated_dataset_has_two_splits_one_class_and_a_label_per_image():
    archive = zipfile.ZipFile(io.BytesIO(smoke.dataset_zip(train=3, val=2)))
    names = set(archive.namelist())
    data = yaml.safe_load(archive.read("data.yaml"))
    assert data["names"] == ["box"]
    assert data["nc"] == 1
    for split, count in (("train", 3), ("val", 2)):
        images = sorted(n for n in names if n.startswith(f"images/{split}/"))
        labels = sorted(n for n in names if n.startswith(f"labels/{split}/"))
        assert len(images) == len(labels) == count
        assert [n.split("/")[-1][:-4] for n in images] == [n.split("/")[-1][:-4] for n in labels]


@pytest.mark.parametrize("seed", [0, 5, 13])
def test_each_label_box_covers_the_red_rectangle_drawn_in_its_image(seed):
    png, (cx, cy, w, h) = smoke.png_with_box(seed=seed)
    image = Image.open(io.BytesIO(png))
    image.load()
    assert image.size == (smoke.IMAGE_SIZE, smoke.IMAGE_SIZE)
    assert image.mode == "RGB"
    assert all(0 < v <= 1 for v in (cx, cy, w, h))
    size = smoke.IMAGE_SIZE
    assert image.getpixel((int(cx * size), int(cy * size))) == (230, 40, 40)
    # Just outside the box, left and above, is background.
    assert image.getpixel((int((cx - w / 2) * size) - 1, int(cy * size))) == (90, 90, 90)
    assert image.getpixel((int(cx * size), int((cy - h / 2) * size) - 1)) == (90, 90, 90)


def test_a_multipart_body_carries_its_fields_and_files_intact():
    body, content_type = smoke.multipart_body(
        fields={"name": "smoke-1"}, files=[("file", "d.zip", b"\x00PK\r\n--binary")]
    )
    message = email.message_from_bytes(
        f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode() + body
    )
    parts = {part.get_param("name", header="content-disposition"): part for part in message.walk()}
    assert parts["name"].get_payload(decode=True) == b"smoke-1"
    assert parts["file"].get_filename() == "d.zip"
    assert parts["file"].get_payload(decode=True) == b"\x00PK\r\n--binary"


def test_the_detections_check_counts_well_formed_boxes():
    detection = {"box_xyxy": [1, 2, 3, 4], "confidence": 0.5, "class_id": 0}
    body = {"images": [{"detections": [detection, detection]}, {"detections": []}]}
    assert smoke.check_detections(body) == 2


@pytest.mark.parametrize(
    "body",
    [
        {"images": []},
        {"images": [{"detections": [{"box_xyxy": [1, 2, 3], "confidence": 0.5}]}]},
        {"images": [{"detections": [{"box_xyxy": [1, 2, 3, 4], "confidence": 1.5}]}]},
    ],
)
def test_the_detections_check_refuses_an_empty_or_malformed_answer(body):
    with pytest.raises(smoke.SmokeFailed):
        smoke.check_detections(body)


def _node(host, address="127.0.0.1", gpus=2):
    return {"host": host, "address": address, "gpus": gpus, "gpu_mib": 24576 if gpus else 0}


HOSTS = {"gpu-a": 2, "gpu-b": 2}


def test_the_cluster_check_takes_a_head_and_one_node_per_gpu_host_on_loopback():
    nodes = [_node("gpu-a"), _node("gpu-b"), _node("head", gpus=0)]
    smoke.check_ray_nodes(nodes, hosts=HOSTS, address="127.0.0.1")


@pytest.mark.parametrize(
    "nodes",
    [
        # the head advertising the machine's network address
        [_node("gpu-a"), _node("gpu-b"), _node("head", address="192.0.2.2", gpus=0)],
        # a host missing, or with a GPU short
        [_node("gpu-a"), _node("head", gpus=0)],
        [_node("gpu-a"), _node("gpu-b", gpus=1)],
    ],
)
def test_the_cluster_check_refuses_a_node_off_loopback_or_a_host_short(nodes):
    with pytest.raises(smoke.SmokeFailed):
        smoke.check_ray_nodes(nodes, hosts=HOSTS, address="127.0.0.1")


def test_gpus_are_counted_per_host():
    gpus = [{"host": "gpu-a", "index": 0}, {"host": "gpu-b", "index": 1}, {"host": "gpu-a"}]
    assert smoke.hosts_of(gpus) == {"gpu-a": 2, "gpu-b": 1}
