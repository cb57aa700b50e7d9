"""Annotated copies of images: boxes and labels drawn with OpenCV's built-in font.

Ultralytics' own Annotator fetches Arial.ttf from the internet the first time it
draws text; OpenCV's Hershey fonts are compiled in, so nothing is downloaded. The boxes
are drawn on the array the model read (decoded once; see pixels.decode).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# A fixed, distinguishable colour per class id (cycled), as RGB.
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


def draw_detections(*, image: Any, detections: list[dict[str, Any]], target: Path) -> Path:
    """Draw on `image` (a BGR array, in place: no second copy of a large image) and save
    it to `target`, in the format its suffix names."""
    import cv2

    height, width = image.shape[:2]
    thickness = max(1, round((width + height) / 600))
    scale = max(0.4, (width + height) / 2400)
    for det in detections:
        red, green, blue = _PALETTE[det["class_id"] % len(_PALETTE)]
        colour = (blue, green, red)
        x0, y0, x1, y1 = (round(v) for v in det["box_xyxy"])
        cv2.rectangle(image, (x0, y0), (x1, y1), colour, thickness)
        label = f"{det['class_name']} {det['confidence']:.2f}"
        (text_w, text_h), baseline = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
        top = y0 - text_h - baseline - 2 if y0 - text_h - baseline - 2 >= 0 else y0
        cv2.rectangle(image, (x0, top), (x0 + text_w + 4, top + text_h + baseline + 2), colour, -1)
        cv2.putText(
            image,
            label,
            (x0 + 2, top + text_h),
            cv2.FONT_HERSHEY_SIMPLEX,
            scale,
            (255, 255, 255),
            1,
            cv2.LINE_AA,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(target), image):
        # A suffix OpenCV cannot write (.gif, .tif without support...): PNG beside it.
        target = target.with_suffix(".png")
        cv2.imwrite(str(target), image)
    return target
