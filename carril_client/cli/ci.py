"""`carril ci-train`: train, compare the candidate with the serving version, promote only
if it beats it by the threshold (the server checks the same gate again, in the
transaction that changes the stage)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from carril_client.cli import exits, training
from carril_client.cli.common import JsonOption, client, job_follow, output
from carril_client.cli.output import Output
from carril_client.client import Client
from carril_client.errors import GateFailed, NotFound

METRICS = ("precision", "recall", "mAP50", "mAP50-95")


@dataclass
class Numbers:
    """One version's numbers and where they come from."""

    version: str
    source: str  # "evaluate job <id>" or "training validation"
    metrics: dict[str, float | None]
    per_class: list[dict[str, Any]] = field(default_factory=list)


def evaluation_print(evaluation: dict[str, Any], out: Output) -> None:
    metrics = evaluation.get("metrics") or {}
    out.table(["metric", "value"], [[k, _fmt(metrics.get(k))] for k in METRICS])
    rows = evaluation.get("per_class") or []
    if rows:
        out.table(
            ["class", *METRICS],
            [[r.get("class_name"), *(_fmt(r.get(k)) for k in METRICS)] for r in rows],
        )


def _fmt(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, int | float) else "-"


def numbers_of(
    carril: Client, version: dict[str, Any], dataset: str, evaluate: bool, out: Output
) -> Numbers:
    """Evaluate jobs when the server has the kind (issue 13); else the numbers the
    version's own training measured on its validation split."""
    if evaluate:
        try:
            job = carril.evaluate(model_version=version["id"], dataset=dataset)
        except NotFound:
            out.note("this server has no evaluate jobs; comparing training validation numbers")
        else:
            job = job_follow(carril, job["id"], out)
            if job["state"] == "succeeded":
                evaluation = carril.job_evaluation(job["id"])
                return Numbers(
                    version=version["id"],
                    source=f"evaluate job {job['id']}",
                    metrics=dict(evaluation.get("metrics") or {}),
                    per_class=list(evaluation.get("per_class") or []),
                )
            out.note(f"evaluate job {job['id']} {job['state']}; using training validation")
    return Numbers(
        version=version["id"],
        source="training validation",
        metrics={k: version.get("metrics", {}).get(k) for k in METRICS},
    )


def comparison_text(
    metric: str, candidate: Numbers, serving: Numbers | None, threshold: float, passed: bool
) -> str:
    c = candidate.metrics.get(metric)
    if serving is None:
        return (
            f"ci-train gate {'passed' if passed else 'refused'}: nothing serving; candidate "
            f"{metric} {_fmt(c)} ({candidate.source})"
        )
    s = serving.metrics.get(metric)
    return (
        f"ci-train gate {'passed' if passed else 'refused'}: {metric} candidate {_fmt(c)} "
        f"({candidate.source}) vs serving {serving.version} {_fmt(s)} ({serving.source}); "
        f"required improvement {threshold:g}"
    )


def gate_passes(metric: str, candidate: Numbers, serving: Numbers | None, threshold: float) -> bool:
    c = candidate.metrics.get(metric)
    if c is None:
        return False
    if serving is None:
        return c > 0  # the first candidate that learned anything
    s = serving.metrics.get(metric)
    return s is None or c - s >= threshold


def table_print(metric: str, candidate: Numbers, serving: Numbers | None, out: Output) -> None:
    rows = []
    for key in METRICS:
        c = candidate.metrics.get(key)
        s = serving.metrics.get(key) if serving else None
        diff = c - s if isinstance(c, int | float) and isinstance(s, int | float) else None
        rows.append([("* " if key == metric else "") + key, _fmt(s), _fmt(c), _fmt(diff)])
    out.table(["metric", "serving", "candidate", "difference"], rows, title="overall")
    serving_classes = {r.get("class_name"): r for r in (serving.per_class if serving else [])}
    if candidate.per_class:
        out.table(
            ["class", f"serving {metric}", f"candidate {metric}"],
            [
                [
                    r.get("class_name"),
                    _fmt(serving_classes.get(r.get("class_name"), {}).get(metric)),
                    _fmt(r.get(metric)),
                ]
                for r in candidate.per_class
            ],
            title="per class",
        )
    out.say(
        f"numbers from: candidate {candidate.source}"
        + (f"; serving {serving.source}" if serving else "; nothing serving")
    )


@training.training_options
def ci_train(
    request: training.TrainingRequest,
    gate_metric: Annotated[str, typer.Option(help="precision, recall, mAP50, mAP50-95")] = (
        "mAP50-95"
    ),
    min_improvement: Annotated[float, typer.Option(help="needed over serving")] = 0.0,
    promote: Annotated[bool, typer.Option("--promote", help="promote when the gate holds")] = False,
    allow_did_not_learn: Annotated[
        bool,
        typer.Option(
            "--allow-did-not-learn",
            help="let a candidate whose training did not learn (best fitness 0) through",
        ),
    ] = False,
    evaluate: Annotated[
        bool, typer.Option(help="compare with evaluate jobs when the server has them")
    ] = True,
    json_: JsonOption = False,
) -> None:
    """Train, compare with the serving version, and (with --promote) promote the candidate
    only if it beats it by --min-improvement. Exit 1 when the job fails or the gate refuses."""
    if gate_metric not in METRICS:
        raise typer.BadParameter(f"one of {', '.join(METRICS)}", param_hint="--gate-metric")
    out = output(json_)
    with client() as carril:
        job = request.start(carril)
        out.note(f"training job {job['id']}")
        job = job_follow(carril, job["id"], out)
        document: dict[str, Any] = {"job": job["id"], "job_state": job["state"]}
        if job["state"] != "succeeded" or not job.get("registered_model_version"):
            document["outcome"] = "training_failed"
            out.emit(document, lambda: out.note(f"training job {job['id']} {job['state']}"))
            raise typer.Exit(exits.FAILED)
        candidate_version = carril.model_get(job["registered_model_version"])
        serving_version = carril.model_serving()
        candidate = numbers_of(carril, candidate_version, request.dataset, evaluate, out)
        serving = (
            numbers_of(carril, serving_version, request.dataset, evaluate, out)
            if serving_version
            else None
        )
        passed = gate_passes(gate_metric, candidate, serving, min_improvement)
        reason = comparison_text(gate_metric, candidate, serving, min_improvement, passed)
        if candidate_version.get("did_not_learn") and not allow_did_not_learn:
            # The server's gate refuses it too (ADR 0045); said here before asking.
            passed = False
            reason = "ci-train gate refused: the candidate did not learn (best fitness 0)"
        document |= {
            "candidate": candidate.__dict__,
            "serving": serving.__dict__ if serving else None,
            "gate": {"metric": gate_metric, "min_improvement": min_improvement, "passed": passed},
            "reason": reason,
            "promoted": False,
        }
        if not out.json_mode:
            table_print(gate_metric, candidate, serving, out)
        if passed and promote:
            try:
                carril.model_stage(
                    candidate.version,
                    stage="serving",
                    reason=reason,
                    require={
                        "metric": gate_metric,
                        "over": "serving",
                        "min_improvement": min_improvement,
                        "dataset": request.dataset,
                        "allow_did_not_learn": allow_did_not_learn,
                    },
                )
                document["promoted"] = True
            except GateFailed as exc:
                passed = False
                document["gate"] |= {"passed": False, "server": exc.details}
                document["reason"] = f"server refused: {exc.message}"
    document["outcome"] = (
        "promoted" if document["promoted"] else ("passed" if passed else "refused")
    )
    out.emit(document, lambda: out.say(f"{document['reason']} -> {document['outcome']}"))
    if not passed:
        raise typer.Exit(exits.FAILED)
