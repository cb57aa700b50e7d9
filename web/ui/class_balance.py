"""The class balance chart on a dataset's page: instances per class per split, as bars.

Drawn on the server as SVG (nothing fetched, nothing to run), with a table of the same
numbers beside it for whoever does not see the bars; this module only lays the bars out.
"""

from __future__ import annotations

from typing import Any

LABEL_WIDTH = 150  # class names, right-aligned against the bars
BARS_WIDTH = 420  # the longest bar
COUNT_WIDTH = 70  # the count written after each bar
BAR_HEIGHT = 14
BAR_GAP = 2
GROUP_GAP = 12
NAME_CHARS = 20  # longer class names are shortened in the chart (the table has them whole)


def class_balance(*, classes: list[str], splits: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`splits`: [{"name", "per_class": [instances per class, in `classes` order]}]."""
    if not classes or not splits:
        return None
    largest = max((n for s in splits for n in s["per_class"]), default=0)
    groups = []
    y = 0
    for index, name in enumerate(classes):
        bars = []
        for split in splits:
            count = split["per_class"][index]
            width = round(count / largest * BARS_WIDTH, 1) if largest else 0
            if count and width < 1:
                width = 1  # a class with instances always shows a bar
            bars.append(
                {
                    "split": split["name"],
                    "count": count,
                    "y": y,
                    "width": width,
                    "text_x": LABEL_WIDTH + width + 6,
                    "text_y": y + BAR_HEIGHT - 3,
                }
            )
            y += BAR_HEIGHT + BAR_GAP
        group_height = len(splits) * (BAR_HEIGHT + BAR_GAP) - BAR_GAP
        groups.append(
            {
                "name": name,
                "short_name": name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…",
                "label_y": y - BAR_GAP - group_height / 2 + 4,
                "bars": bars,
            }
        )
        y += GROUP_GAP - BAR_GAP
    totals = [(sum(s["per_class"][i] for s in splits), name) for i, name in enumerate(classes)]
    most, least = max(totals), min(totals)
    return {
        "splits": [s["name"] for s in splits],
        "groups": groups,
        "rows": [
            {"name": name, "counts": [s["per_class"][i] for s in splits]}
            for i, name in enumerate(classes)
        ],
        "width": LABEL_WIDTH + BARS_WIDTH + COUNT_WIDTH,
        "height": max(y - GROUP_GAP + BAR_GAP, BAR_HEIGHT),
        "label_x": LABEL_WIDTH - 8,
        "bars_x": LABEL_WIDTH,
        "bar_height": BAR_HEIGHT,
        "summary": (
            f"{len(classes)} class{'es' if len(classes) != 1 else ''} over "
            f"{', '.join(s['name'] for s in splits)}; most instances: {most[1]} ({most[0]}), "
            f"fewest: {least[1]} ({least[0]})"
        ),
    }
