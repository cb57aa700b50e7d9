"""Storage held, by user and by kind, for the administrators' storage page."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from datasets.models import Dataset
from jobs.models import Job
from registry.models import ModelVersion

from retention.policy import prune_plan, storage_root, tree_bytes

UNOWNED = "(no user)"


def storage_by_user_and_kind() -> list[dict[str, Any]]:
    root = storage_root()
    held: dict[tuple[str, str], int] = defaultdict(int)
    for dataset in Dataset.objects.select_related("owner"):
        held[(dataset.owner.get_username(), "datasets")] += tree_bytes(dataset.path)
    for job in Job.objects.select_related("owner").only("id", "kind", "owner__username"):
        user = job.owner.get_username()
        held[(user, f"{job.kind} job folders")] += tree_bytes(root / "jobs" / str(job.id))
        held[(user, "inference uploads")] += tree_bytes(root / "uploads" / "infer" / str(job.id))
    for version in ModelVersion.objects.select_related("source_job__owner"):
        user = version.source_job.owner.get_username() if version.source_job else UNOWNED
        held[(user, "weights")] += tree_bytes(root / "weights" / f"{version.fingerprint}.pt")
    return [
        {"user": user, "kind": kind, "bytes": size}
        for (user, kind), size in sorted(held.items())
        if size
    ]


def storage_overview() -> dict[str, Any]:
    rows = storage_by_user_and_kind()
    by_user: dict[str, int] = defaultdict(int)
    by_kind: dict[str, int] = defaultdict(int)
    for row in rows:
        by_user[row["user"]] += row["bytes"]
        by_kind[row["kind"]] += row["bytes"]
    plan = prune_plan()
    by_rule: dict[str, int] = defaultdict(int)
    for item in plan:
        by_rule[item.rule] += item.bytes
    return {
        "rows": rows,
        "by_user": sorted(by_user.items()),
        "by_kind": sorted(by_kind.items()),
        "total": sum(by_user.values()),
        "prune": {
            "bytes": sum(item.bytes for item in plan),
            "by_rule": sorted(by_rule.items()),
            "items": [
                {
                    "path": str(item.path.relative_to(storage_root())),
                    "bytes": item.bytes,
                    "rule": item.rule,
                    "owner": item.owner or UNOWNED,
                    "why": item.why,
                }
                for item in plan
            ],
        },
    }
