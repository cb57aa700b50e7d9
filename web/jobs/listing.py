"""The job list's filters, read from a request's query parameters and checked, for the
API and the page alike (unknown values are refused, never ignored)."""

from __future__ import annotations

import uuid
from typing import Any

from carril_web.errors import ValidationFailed

from jobs.labels import tag_problem
from jobs.models import JobKind, JobState


def job_list_filters(*, params: Any) -> dict[str, Any]:
    """`state`, `kind`, `tag`, `dataset` as `jobs_visible_to` takes them; or ValidationFailed."""
    fields: dict[str, list[str]] = {}
    state = params.get("state") or None
    kind = params.get("kind") or None
    tag = (params.get("tag") or "").strip() or None
    dataset = params.get("dataset") or None
    if state and state not in JobState.values:
        fields["state"] = [f"One of {JobState.values}."]
    if kind and kind not in JobKind.values:
        fields["kind"] = [f"One of {JobKind.values}."]
    if tag and tag_problem(tag):
        fields["tag"] = [tag_problem(tag) or ""]
    if dataset:
        try:
            dataset = uuid.UUID(dataset)
        except ValueError:
            fields["dataset"] = ["A dataset id (UUID)."]
    if fields:
        raise ValidationFailed(details={"fields": fields})
    return {"state": state, "kind": kind, "tag": tag, "dataset_id": dataset}
