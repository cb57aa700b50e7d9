"""Parity of an export with its `.pt` model: the same boxes, the same confidences.

Both models predict on the same images at the same size. A box of one side is matched
by an unmatched box of the other side with the same class and IoU >= PARITY_IOU
(greedy, highest confidence first). Boxes are counted at the parity confidence; the
other side is searched down to that confidence minus the tolerance, so a box whose
score sits on the threshold does not count as missing when it moved by a hair. The
export passes when the matched fraction of all counted boxes reaches
PARITY_MIN_MATCHED and no matched pair differs in confidence by more than
PARITY_CONF_TOLERANCE.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_service.contract import (
    PARITY_CONF_TOLERANCE,
    PARITY_IOU,
    PARITY_MIN_MATCHED,
    ParityResult,
)

# A box: (class_id, confidence, x0, y0, x1, y1).
Box = tuple[int, float, float, float, float, float]
PARITY_CONF = 0.25


def iou(a: Box, b: Box) -> float:
    x0, y0 = max(a[2], b[2]), max(a[3], b[3])
    x1, y1 = min(a[4], b[4]), min(a[5], b[5])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    union = (a[4] - a[2]) * (a[5] - a[3]) + (b[4] - b[2]) * (b[5] - b[3]) - inter
    return inter / union if union > 0 else 0.0


def matched_pairs(counted: list[Box], others: list[Box]) -> list[tuple[Box, Box]]:
    """Greedy one-to-one matches of `counted` boxes among `others`: the same class,
    IoU >= PARITY_IOU, the highest IoU and then the closest confidence."""
    free = list(others)
    pairs = []
    for box in sorted(counted, key=lambda b: -b[1]):
        candidates = [o for o in free if o[0] == box[0] and iou(box, o) >= PARITY_IOU]
        if candidates:
            best = max(candidates, key=lambda o: (round(iou(box, o), 6), -abs(o[1] - box[1])))
            free.remove(best)
            pairs.append((box, best))
    return pairs


def compare(
    reference: Sequence[Sequence[Box]],
    exported: Sequence[Sequence[Box]],
    *,
    conf: float = PARITY_CONF,
    tolerance: float = PARITY_CONF_TOLERANCE,
) -> ParityResult:
    """Parity over images: `reference[i]` and `exported[i]` are image i's boxes, at
    any confidence down to `conf - tolerance`."""
    counted = matched = 0
    boxes_ref = boxes_exp = 0
    max_diff = 0.0
    for ref, exp in zip(reference, exported, strict=True):
        ref_counted = [b for b in ref if b[1] >= conf]
        exp_counted = [b for b in exp if b[1] >= conf]
        floor = conf - tolerance
        ref_pairs = matched_pairs(ref_counted, [b for b in exp if b[1] >= floor])
        exp_pairs = matched_pairs(exp_counted, [b for b in ref if b[1] >= floor])
        boxes_ref += len(ref_counted)
        boxes_exp += len(exp_counted)
        counted += len(ref_counted) + len(exp_counted)
        matched += len(ref_pairs) + len(exp_pairs)
        for a, b in ref_pairs + exp_pairs:
            max_diff = max(max_diff, abs(a[1] - b[1]))
    fraction = matched / counted if counted else 1.0
    return {
        "passed": fraction >= PARITY_MIN_MATCHED and max_diff <= tolerance,
        "images": len(reference),
        "boxes_reference": boxes_ref,
        "boxes_export": boxes_exp,
        "matched_fraction": round(fraction, 4),
        "max_conf_diff": round(max_diff, 5),
        "iou_threshold": PARITY_IOU,
        "conf_tolerance": tolerance,
        "min_matched": PARITY_MIN_MATCHED,
        "conf": conf,
    }


def boxes_of(result: Any) -> list[Box]:
    """An ultralytics result's boxes as parity boxes."""
    boxes = result.boxes
    if boxes is None or not len(boxes):
        return []
    return [
        (int(c), float(s), *(float(v) for v in xyxy))
        for c, s, xyxy in zip(
            boxes.cls.tolist(), boxes.conf.tolist(), boxes.xyxy.tolist(), strict=True
        )
    ]
