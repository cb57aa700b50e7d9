"""The validation report: what a dataset holds, every problem with its file and line, and
the warnings about a dataset that is valid but may not be what its owner meant (ADR 0046).

The per-split counts are the dataset's `splits` and its class names its `classes`; the
report document (`as_dict`) gives neither again, only totals, problems and warnings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Past this many problems the report says how many more there were instead of listing them.
MAX_LISTED_PROBLEMS = 500


@dataclass
class SplitCounts:
    images: int = 0
    labels: int = 0
    instances: int = 0
    background_images: int = 0  # images without a label file or with an empty one
    per_class: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "images": self.images,
            "labels": self.labels,
            "instances": self.instances,
            "background_images": self.background_images,
            "per_class": dict(self.per_class),
        }


@dataclass
class Report:
    classes: list[str] = field(default_factory=list)
    splits: dict[str, SplitCounts] = field(default_factory=dict)
    problems: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    problems_total: int = 0
    auto_split: dict[str, Any] | None = None

    def problem(
        self,
        *,
        code: str,
        message: str,
        file: str | None = None,
        line: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.problems_total += 1
        if len(self.problems) < MAX_LISTED_PROBLEMS:
            entry: dict[str, Any] = {"code": code, "message": message, "file": file, "line": line}
            if details is not None:
                entry["details"] = details
            self.problems.append(entry)

    def warn(
        self,
        *,
        code: str,
        message: str,
        file: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        if len(self.warnings) < MAX_LISTED_PROBLEMS:
            entry: dict[str, Any] = {"code": code, "message": message, "file": file}
            if details is not None:
                entry["details"] = details
            self.warnings.append(entry)

    @property
    def valid(self) -> bool:
        return self.problems_total == 0

    def per_class_totals(self) -> dict[str, dict[str, int]]:
        totals = {name: {"instances": 0} for name in self.classes}
        for counts in self.splits.values():
            for name, n in counts.per_class.items():
                totals.setdefault(name, {"instances": 0})["instances"] += n
        return totals

    def splits_dict(self) -> dict[str, dict[str, Any]]:
        """The per-split counts: the dataset's `splits`, kept on the row, valid or not."""
        return {name: counts.as_dict() for name, counts in self.splits.items()}

    def as_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "per_class": self.per_class_totals(),
            "totals": {
                "images": sum(c.images for c in self.splits.values()),
                "labels": sum(c.labels for c in self.splits.values()),
                "instances": sum(c.instances for c in self.splits.values()),
                "background_images": sum(c.background_images for c in self.splits.values()),
            },
            "auto_split": self.auto_split,
            "problems": list(self.problems),
            "problems_total": self.problems_total,
            "warnings": list(self.warnings),
        }
