"""What every command shares: the --json option, the client from the settings, waiting
for a job with a live bar, and Ctrl-C while waiting."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from carril_client.cli import exits
from carril_client.cli.config import settings_load
from carril_client.cli.output import Output
from carril_client.client import TERMINAL_JOB_STATES, Client
from carril_client.errors import AuthRefused

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document (for scripts).")]


def output(json_mode: bool) -> Output:
    return Output(json_mode=json_mode or bool(_GLOBAL.get("json")))


_GLOBAL: dict[str, Any] = {}


def client() -> Client:
    settings = settings_load()
    if not settings.token:
        raise AuthRefused(
            "Not signed in: run `carril login` or set CARRIL_TOKEN.", code="NOT_SIGNED_IN"
        )
    return Client(settings.url, token=settings.token)


def progress_line(job: dict[str, Any]) -> str:
    """`seed 1/2 · epoch 3/10 · batch 4/8 · mAP50-95 0.412` from the status document."""
    p = job.get("progress") or {}
    parts = [str(job.get("state"))]
    for key, total in (("seed", "seeds"), ("epoch", "epochs"), ("batch", "batches")):
        if p.get(key) is not None:
            parts.append(f"{key} {p[key]}/{p.get(total) or '?'}")
    latest = latest_epoch(job)
    for key in ("box_loss", "mAP50", "mAP50-95"):
        if latest.get(key) is not None:
            parts.append(f"{key} {latest[key]:.3f}")
    return " · ".join(parts)


def latest_epoch(job: dict[str, Any]) -> dict[str, Any]:
    epochs = (job.get("metrics") or {}).get("epochs") or []
    return epochs[-1] if epochs else {}


def job_follow(carril: Client, job_id: str, out: Output) -> dict[str, Any]:
    """Wait for a job: a live bar at a terminal, a line per change when piped, nothing
    with --json. Ctrl-C asks whether to cancel the job or detach (detach when no one can
    answer)."""
    try:
        if out.interactive:
            return _follow_with_bar(carril, job_id, out)
        last = [""]

        def report(job: dict[str, Any]) -> None:
            line = progress_line(job)
            if line != last[0]:
                last[0] = line
                out.note(f"{job_id[:8]} {line}")

        return carril.job_wait(job_id, on_update=report, raise_on_failure=False)
    except KeyboardInterrupt:
        _interrupted(carril, job_id, out)
        raise typer.Exit(exits.INTERRUPTED) from None


def _follow_with_bar(carril: Client, job_id: str, out: Output) -> dict[str, Any]:
    columns = (
        TextColumn("[bold]{task.fields[job]}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=out.err) as bar:
        task = bar.add_task("submitted", total=1.0, job=job_id[:8])

        def report(job: dict[str, Any]) -> None:
            fraction = (job.get("progress") or {}).get("fraction") or 0.0
            bar.update(task, completed=fraction, description=progress_line(job))

        job = carril.job_wait(job_id, on_update=report, raise_on_failure=False)
        report(job)
        return job


def _interrupted(carril: Client, job_id: str, out: Output) -> None:
    if sys.stdin.isatty() and not out.json_mode:
        answer = typer.prompt(
            f"\nJob {job_id} is still running. Cancel it (c) or detach (d)?", default="d"
        )
        if answer.strip().lower().startswith("c"):
            carril.job_cancel(job_id)
            out.note(f"cancel asked for job {job_id}")
            return
    out.note(f"detached; the job goes on: carril jobs show {job_id}")


def job_ended_well(job: dict[str, Any]) -> bool:
    return job.get("state") == "succeeded"


def job_outcome(job: dict[str, Any], out: Output) -> None:
    """Say how a finished job ended; exit 1 if badly."""
    if job.get("state") not in TERMINAL_JOB_STATES:
        return
    if not job_ended_well(job):
        error = job.get("error") or {}
        out.note(
            f"job {job['id']} {job['state']}: {error.get('code', '')} {error.get('message', '')}"
        )
        raise typer.Exit(exits.FAILED)
