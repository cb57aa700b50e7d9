"""Deleting what the retention policy plans (`manage.py prune`, and the reconciler's
scheduled run). Each item's protection is checked again just before it goes, so a job
queued since the plan was made keeps what it needs."""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, field

from django.conf import settings

from retention.policy import Item, is_protected, protected_paths, prune_plan

logger = logging.getLogger(__name__)


@dataclass
class PruneReport:
    dry_run: bool
    items: list[Item] = field(default_factory=list)  # freed (or, dry run, would be)
    skipped: list[Item] = field(default_factory=list)  # protected since the plan

    @property
    def bytes(self) -> int:
        return sum(item.bytes for item in self.items)


def prune_run(*, dry_run: bool) -> PruneReport:
    report = PruneReport(dry_run=dry_run)
    for item in prune_plan():
        if dry_run:
            report.items.append(item)
            continue
        if is_protected(item.path, protected_paths()):
            report.skipped.append(item)
            continue
        if item.path.is_dir() and not item.path.is_symlink():
            shutil.rmtree(item.path, ignore_errors=True)
        else:
            item.path.unlink(missing_ok=True)
        report.items.append(item)
    if not dry_run and report.items:
        logger.info("pruned %d items, %d bytes", len(report.items), report.bytes)
    return report


class PruneSchedule:
    """The reconciler's loop runs a prune at its start, then every CARRIL_PRUNE_INTERVAL_S
    (0: never on its own; `manage.py prune` still works)."""

    def __init__(self, *, clock=time.monotonic) -> None:
        self._clock = clock
        self._last: float | None = None

    def run_if_due(self) -> PruneReport | None:
        interval = float(settings.CARRIL_PRUNE_INTERVAL_S)
        now = self._clock()
        if interval <= 0 or (self._last is not None and now - self._last < interval):
            return None
        self._last = now
        try:
            return prune_run(dry_run=False)
        except Exception:  # the reconciler outlives a failed prune; the log says why
            logger.exception("prune failed")
            return None
