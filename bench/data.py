"""Synthetic inputs, drawn on the fly (nothing is downloaded): images, a detection
dataset, an untrained checkpoint, and a large dataset zip for the upload benchmark."""

from __future__ import annotations

import os
import random
import zipfile
from pathlib import Path

CLASS_NAMES = ("square", "disc")


def _shapes_image(*, rng: random.Random, size: int):
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), tuple(rng.randrange(20, 90) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    labels = []
    for _ in range(rng.randint(1, 2)):
        cls = rng.randrange(len(CLASS_NAMES))
        side = rng.randint(max(2, size // 4), max(3, size // 2))
        x0, y0 = rng.randint(0, size - side), rng.randint(0, size - side)
        box = (x0, y0, x0 + side, y0 + side)
        colour = (230, 60, 60) if cls == 0 else (60, 200, 90)
        (draw.rectangle if cls == 0 else draw.ellipse)(box, fill=colour)
        cx, cy, w = (x0 + side / 2) / size, (y0 + side / 2) / size, side / size
        labels.append(f"{cls} {cx:.6f} {cy:.6f} {w:.6f} {w:.6f}")
    return image, labels


def images_write(*, folder: Path, count: int, size: int, seed: int = 11) -> list[Path]:
    """`count` JPEG images of shapes on a plain background."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    paths = []
    for i in range(count):
        image, _ = _shapes_image(rng=rng, size=size)
        path = folder / f"img_{i:04d}.jpg"
        image.save(path, quality=90)
        paths.append(path)
    return paths


def dataset_write(*, root: Path, train: int, val: int, size: int, seed: int = 7) -> Path:
    """A YOLO detection dataset folder with data.yaml; returns the folder."""
    rng = random.Random(seed)
    for split, count in (("train", train), ("val", val)):
        (root / "images" / split).mkdir(parents=True, exist_ok=True)
        (root / "labels" / split).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            image, labels = _shapes_image(rng=rng, size=size)
            image.save(root / "images" / split / f"{i:04d}.jpg", quality=90)
            (root / "labels" / split / f"{i:04d}.txt").write_text("\n".join(labels) + "\n")
    names = "\n".join(f"  {i}: {name}" for i, name in enumerate(CLASS_NAMES))
    (root / "data.yaml").write_text(
        f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n{names}\n"
    )
    return root


def checkpoint_write(*, path: Path) -> Path:
    """An untrained yolov8n checkpoint built from its architecture yaml (no download)."""
    from ultralytics import YOLO

    path.parent.mkdir(parents=True, exist_ok=True)
    model = YOLO("yolov8n.yaml")
    model.model.names = {i: f"class-{i}" for i in range(len(model.model.names))}
    model.save(str(path))
    return path


def big_dataset_zip(*, path: Path, total_bytes: int, side: int = 1024, seed: int = 3) -> Path:
    """A valid dataset zip of about `total_bytes`: stored (not deflated) BMP images of
    random pixels, so the bytes are incompressible and the validator accepts them."""
    rng = random.Random(seed)
    header = _bmp_header(side=side)
    image_bytes = len(header) + side * side * 3
    count = max(2, total_bytes // image_bytes)
    val = max(1, count // 10)
    names = "\n".join(f"  {i}: {name}" for i, name in enumerate(CLASS_NAMES))
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(
            "data.yaml", f"path: .\ntrain: images/train\nval: images/val\nnames:\n{names}\n"
        )
        for i in range(count):
            split = "val" if i < val else "train"
            with archive.open(f"images/{split}/{i:05d}.bmp", "w", force_zip64=True) as out:
                out.write(header)
                out.write(os.urandom(side * side * 3))
            label = f"{rng.randrange(2)} 0.5 0.5 {rng.uniform(0.1, 0.9):.4f} 0.3\n"
            archive.writestr(f"labels/{split}/{i:05d}.txt", label)
    return path


def _bmp_header(*, side: int) -> bytes:
    """A 24-bit bottom-up BMP header for a side x side image (rows are 4-byte aligned
    when side is a multiple of 4)."""
    import struct

    pixels = side * side * 3
    file_header = struct.pack("<2sIHHI", b"BM", 54 + pixels, 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, side, side, 1, 24, 0, pixels, 2835, 2835, 0, 0)
    return file_header + info
