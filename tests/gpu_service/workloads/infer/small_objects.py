"""Generated images of small squares: 64 px training tiles and large scenes to slice."""

from __future__ import annotations

import random
from pathlib import Path

TILE = 64
SIDE = (16, 22)  # square sides, pixels: a quarter to a third of a tile


def _squares(rng: random.Random, size: int, count: int, side: tuple[int, int]) -> list[tuple]:
    boxes: list[tuple[int, int, int, int]] = []
    while len(boxes) < count:
        s = rng.randint(*side)
        x, y = rng.randint(2, size - s - 2), rng.randint(2, size - s - 2)
        if all(
            x + s + 4 < bx or bx + bs + 4 < x or y + s + 4 < by or by + bs + 4 < y
            for bx, by, bs, _ in boxes
        ):
            boxes.append((x, y, s, s))
    return boxes


def draw(size: int, boxes: list[tuple], seed: int):
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.new("RGB", (size, size), (rng.randint(0, 40),) * 3)
    pen = ImageDraw.Draw(image)
    for x, y, s, _ in boxes:
        pen.rectangle((x, y, x + s - 1, y + s - 1), fill=(240, 240, 60))
    return image


def make_tiles_dataset(root: Path, *, train: int = 128, val: int = 8, seed: int = 3) -> Path:
    """64 px tiles with one to three small squares each, YOLO labels, one class."""
    rng = random.Random(seed)
    for split, count in (("train", train), ("val", val)):
        (root / "images" / split).mkdir(parents=True, exist_ok=True)
        (root / "labels" / split).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            boxes = _squares(rng, TILE, rng.randint(1, 3), SIDE)
            draw(TILE, boxes, seed=rng.randint(0, 10**6)).save(
                root / "images" / split / f"{i:03d}.png"
            )
            (root / "labels" / split / f"{i:03d}.txt").write_text(
                "".join(
                    f"0 {(x + s / 2) / TILE:.6f} {(y + s / 2) / TILE:.6f} "
                    f"{s / TILE:.6f} {s / TILE:.6f}\n"
                    for x, y, s, _ in boxes
                )
            )
    (root / "data.yaml").write_text(
        f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n  0: square\n"
    )
    return root


def make_scene(path: Path, *, size: int = 256, count: int = 12, seed: int = 11) -> list[tuple]:
    """A large image with `count` small squares; returns their (x0, y0, x1, y1) boxes."""
    rng = random.Random(seed)
    boxes = _squares(rng, size, count, SIDE)
    path.parent.mkdir(parents=True, exist_ok=True)
    draw(size, boxes, seed=seed).save(path)
    return [(x, y, x + s, y + s) for x, y, s, _ in boxes]
