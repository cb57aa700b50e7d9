"""A synthetic shapes dataset: coloured rectangles and circles with YOLO labels.

Used by the tests and by `gpu_check`, so neither needs a dataset from the internet.
"""

from __future__ import annotations

import random
from pathlib import Path

SHAPES = ("rectangle", "circle")


def make_shapes_dataset(root: Path, *, train: int = 8, val: int = 4, size: int = 64) -> Path:
    """Images of one coloured rectangle or circle each, with YOLO labels."""
    from PIL import Image, ImageDraw

    rng = random.Random(7)
    for split, count in (("train", train), ("val", val)):
        (root / "images" / split).mkdir(parents=True, exist_ok=True)
        (root / "labels" / split).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            image = Image.new("RGB", (size, size), (rng.randint(0, 60),) * 3)
            draw = ImageDraw.Draw(image)
            cls = i % 2
            w, h = rng.randint(size // 4, size // 2), rng.randint(size // 4, size // 2)
            x0, y0 = rng.randint(0, size - w - 1), rng.randint(0, size - h - 1)
            colour = (rng.randint(150, 255), rng.randint(0, 255), rng.randint(0, 255))
            if cls == 0:
                draw.rectangle((x0, y0, x0 + w, y0 + h), fill=colour)
            else:
                draw.ellipse((x0, y0, x0 + w, y0 + h), fill=colour)
            image.save(root / "images" / split / f"{i:03d}.jpg")
            cx, cy = (x0 + w / 2) / size, (y0 + h / 2) / size
            (root / "labels" / split / f"{i:03d}.txt").write_text(
                f"{cls} {cx:.6f} {cy:.6f} {w / size:.6f} {h / size:.6f}\n"
            )
    names = "\n".join(f"  {i}: {name}" for i, name in enumerate(SHAPES))
    (root / "data.yaml").write_text(
        f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n{names}\n"
    )
    return root
