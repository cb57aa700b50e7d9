"""Annotated copies of images: boxes and labels drawn with Pillow's built-in font.

Ultralytics' own Annotator fetches Arial.ttf from the internet the first time it
draws text; `ImageFont.load_default()` ships inside Pillow, so nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# A fixed, distinguishable colour per class id (cycled).
_PALETTE = (
    (255, 56, 56),
    (72, 249, 10),
    (0, 149, 255),
    (255, 157, 151),
    (207, 210, 49),
    (146, 204, 23),
    (255, 112, 31),
    (52, 69, 147),
    (255, 178, 29),
    (132, 56, 255),
)


def draw_detections(*, source: Path, detections: list[dict[str, Any]], target: Path) -> Path:
    from PIL import Image, ImageDraw, ImageFont, ImageOps

    with Image.open(source) as opened:
        image = ImageOps.exif_transpose(opened).convert("RGB")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    width = max(1, round(sum(image.size) / 600))
    for det in detections:
        colour = _PALETTE[det["class_id"] % len(_PALETTE)]
        x0, y0, x1, y1 = det["box_xyxy"]
        draw.rectangle((x0, y0, x1, y1), outline=colour, width=width)
        label = f"{det['class_name']} {det['confidence']:.2f}"
        left, top, right, bottom = draw.textbbox((x0, y0), label, font=font)
        text_y = y0 - (bottom - top) - 2 if y0 - (bottom - top) - 2 >= 0 else y0
        box = (x0, text_y, x0 + (right - left) + 4, text_y + (bottom - top) + 2)
        draw.rectangle(box, fill=colour)
        draw.text((x0 + 2, text_y), label, fill=(255, 255, 255), font=font)
    target.parent.mkdir(parents=True, exist_ok=True)
    image.save(target)
    return target
