"""`carril jobs list|show|logs|cancel`."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from carril_client.cli.common import JsonOption, client, output, progress_line
from carril_client.cli.output import Output
from carril_client.client import TERMINAL_JOB_STATES

app = typer.Typer(help="List, read, follow and cancel jobs.", no_args_is_help=True)


@app.command("list")
def list_(
    state: Annotated[str | None, typer.Option(help="only jobs in this state")] = None,
    kind: Annotated[str | None, typer.Option(help="train, infer, ...")] = None,
    json_: JsonOption = False,
) -> None:
    """Your jobs, newest first."""
    out = output(json_)
    with client() as carril:
        jobs = carril.jobs_list(state=state, kind=kind)
    out.emit(
        jobs,
        lambda: out.table(
            ["id", "kind", "state", "progress", "created"],
            [[j["id"], j["kind"], j["state"], progress_line(j), j["created_at"]] for j in jobs],
        ),
    )


def job_print(job: dict[str, Any], out: Output) -> None:
    out.say(f"job {job['id']}  {job['kind']}  {job['state']}")
    out.say(progress_line(job))
    if job.get("error"):
        out.say(f"error: {job['error'].get('code')}: {job['error'].get('message')}")
    if job.get("registered_model_version"):
        out.say(f"model version: {job['registered_model_version']}")


@app.command("show")
def show(job_id: str, json_: JsonOption = False) -> None:
    """One job's status document."""
    out = output(json_)
    with client() as carril:
        job = carril.job_get(job_id)
    out.emit(job, lambda: job_print(job, out))


@app.command("logs")
def logs(
    job_id: str,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep printing new lines")] = False,
    tail: Annotated[int, typer.Option(help="how many lines to start with")] = 200,
    json_: JsonOption = False,
) -> None:
    """A job's log; with -f, new lines until the job ends."""
    out = output(json_)
    with client() as carril:
        lines = carril.job_logs(job_id, tail=tail)
        if out.json_mode and not follow:
            out.document({"job_id": job_id, "lines": lines})
            return
        _print(lines, out)
        while follow:
            state = carril.job_get(job_id)["state"]
            time.sleep(1.0)
            latest = carril.job_logs(job_id, tail=1000)
            fresh = _after(lines, latest)
            _print(fresh, out)
            lines = (lines + fresh)[-2000:]
            if state in TERMINAL_JOB_STATES and not fresh:
                break


def _print(lines: list[str], out: Output) -> None:
    for line in lines:
        if out.json_mode:
            out.document({"line": line})
        else:
            print(line, flush=True)


def _after(seen: list[str], latest: list[str]) -> list[str]:
    """The lines of `latest` after the last place where the end of `seen` appears."""
    if not seen:
        return latest
    size = min(len(seen), 20)
    for end in range(len(latest), 0, -1):
        start = end - size
        block = latest[start:end] if start >= 0 else latest[:end]
        if block == seen[-len(block) :]:
            return latest[end:]
    return latest


@app.command("cancel")
def cancel(job_id: str, json_: JsonOption = False) -> None:
    """Ask for a job to be cancelled."""
    out = output(json_)
    with client() as carril:
        job = carril.job_cancel(job_id)
    out.emit(job, lambda: out.say(f"job {job['id']} {job['state']}"))
