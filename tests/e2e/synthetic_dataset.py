"""A tiny YOLO detection dataset, drawn on the fly: coloured squares and discs on noise."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

from PIL import Image, ImageDraw

CLASS_NAMES = ["square", "disc"]


def _image_with_shapes(*, rng: random.Random, size: int) -> tuple[Image.Image, list[str]]:
    image = Image.new("RGB", (size, size), tuple(rng.randrange(40, 90) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    labels = []
    for _ in range(rng.randint(1, 2)):
        cls = rng.randrange(len(CLASS_NAMES))
        side = rng.randint(size // 4, size // 2)
        x0 = rng.randint(0, size - side)
        y0 = rng.randint(0, size - side)
        box = (x0, y0, x0 + side, y0 + side)
        colour = (230, 60, 60) if cls == 0 else (60, 200, 90)
        if cls == 0:
            draw.rectangle(box, fill=colour)
        else:
            draw.ellipse(box, fill=colour)
        cx, cy, w = (x0 + side / 2) / size, (y0 + side / 2) / size, side / size
        labels.append(f"{cls} {cx:.6f} {cy:.6f} {w:.6f} {w:.6f}")
    return image, labels


def dataset_zip(*, path: Path, images_per_split: int = 4, size: int = 64, seed: int = 7) -> Path:
    """Write a zip with data.yaml and images/ + labels/ for train and val; return its path."""
    rng = random.Random(seed)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        names = "\n".join(f"  {i}: {name}" for i, name in enumerate(CLASS_NAMES))
        archive.writestr(
            "data.yaml", f"path: .\ntrain: images/train\nval: images/val\nnames:\n{names}\n"
        )
        for split in ("train", "val"):
            for i in range(images_per_split):
                image, labels = _image_with_shapes(rng=rng, size=size)
                buffer = io.BytesIO()
                image.save(buffer, format="PNG")
                archive.writestr(f"images/{split}/{split}_{i}.png", buffer.getvalue())
                archive.writestr(f"labels/{split}/{split}_{i}.txt", "\n".join(labels) + "\n")
    return path
