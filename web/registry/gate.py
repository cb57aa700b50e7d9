"""The promotion gate: a candidate becomes serving only if it beats the serving version
on a metric by a margin. Checked by `model_version_set_stage` inside the transaction
that changes the stage, with both rows locked, so two promotions cannot race past it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from carril_web.errors import GateFailed, ValidationFailed

from registry.models import ModelVersion

METRICS = ("precision", "recall", "mAP50", "mAP50-95")


@dataclass(frozen=True)
class Requirement:
    metric: str
    min_improvement: float
    dataset: str | None
    # The explicit override for a candidate whose training did not learn (ADR 0045).
    allow_did_not_learn: bool = False


def requirement_parse(require: dict[str, Any]) -> Requirement:
    problems: dict[str, list[str]] = {}
    metric = require.get("metric")
    if metric not in METRICS:
        problems["require.metric"] = [f"One of {list(METRICS)}."]
    if require.get("over", "serving") != "serving":
        problems["require.over"] = ["Only `serving` is supported."]
    try:
        margin = float(require.get("min_improvement", 0.0))
    except (TypeError, ValueError):
        problems["require.min_improvement"] = ["A number."]
        margin = 0.0
    allow = require.get("allow_did_not_learn", False)
    if not isinstance(allow, bool):
        problems["require.allow_did_not_learn"] = ["true or false."]
    if problems:
        raise ValidationFailed(details={"fields": problems})
    dataset = require.get("dataset")
    return Requirement(
        metric=str(metric),
        min_improvement=margin,
        dataset=str(dataset or "") or None,
        allow_did_not_learn=allow,
    )


def version_number(*, version: ModelVersion, requirement: Requirement) -> tuple[float | None, str]:
    """The version's number and where it comes from: its latest succeeded evaluate job on
    the dataset when there is one, else what its own training measured on validation."""
    if requirement.dataset:
        from jobs.models import Job

        evaluation = (
            Job.objects.filter(
                kind="evaluate",
                state="succeeded",
                model_version=version,
                dataset_id=requirement.dataset,
            )
            .order_by("-finished_at")
            .first()
        )
        metrics = ((evaluation.result or {}).get("metrics") or {}) if evaluation else {}
        if metrics.get(requirement.metric) is not None:
            return float(metrics[requirement.metric]), f"evaluate job {evaluation.id}"
    value = (version.metrics or {}).get(requirement.metric)
    return (float(value) if value is not None else None), "training validation"


def gate_check(
    *, candidate: ModelVersion, serving: ModelVersion | None, requirement: Requirement
) -> dict[str, Any]:
    """The comparison, or GateFailed (409) with both numbers. With nothing serving, the
    first candidate that learned anything (a number above zero) passes.

    A version whose training did not learn (best fitness 0) is refused whatever the
    numbers (ADR 0045): the serving version may be as bad, and "not worse than serving"
    is no reason to serve it. The override is explicit: `allow_did_not_learn`, and then
    the numbers decide as for any candidate."""
    if candidate.did_not_learn and not requirement.allow_did_not_learn:
        raise GateFailed(
            "The candidate did not learn (its best validation fitness is 0); the gate "
            "refuses it unless `allow_did_not_learn` is true.",
            details={
                "metric": requirement.metric,
                "candidate": {"id": str(candidate.id), "warnings": candidate.warnings},
            },
        )
    ours, our_source = version_number(version=candidate, requirement=requirement)
    comparison: dict[str, Any] = {
        "metric": requirement.metric,
        "min_improvement": requirement.min_improvement,
        "candidate": {"id": str(candidate.id), "value": ours, "source": our_source},
        "serving": None,
    }
    if serving is not None:
        theirs, their_source = version_number(version=serving, requirement=requirement)
        comparison["serving"] = {"id": str(serving.id), "value": theirs, "source": their_source}
        passed = ours is not None and (
            theirs is None or ours - theirs >= requirement.min_improvement
        )
    else:
        passed = ours is not None and ours > 0
    if not passed:
        raise GateFailed(
            f"The candidate does not beat the serving version on {requirement.metric} "
            f"by {requirement.min_improvement:g}.",
            details=comparison,
        )
    return comparison
