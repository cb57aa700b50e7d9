"""`carril jobs list|show|logs|cancel|label|compare`."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from carril_client.cli.common import JsonOption, client, output, progress_line
from carril_client.cli.output import Output
from carril_client.client import TERMINAL_JOB_STATES

app = typer.Typer(help="List, read, follow, cancel, label and compare jobs.", no_args_is_help=True)


@app.command("list")
def list_(
    state: Annotated[str | None, typer.Option(help="only jobs in this state")] = None,
    kind: Annotated[str | None, typer.Option(help="train, infer, ...")] = None,
    tag: Annotated[str | None, typer.Option(help="only jobs with this tag")] = None,
    dataset: Annotated[str | None, typer.Option(help="only jobs on this dataset id")] = None,
    sort: Annotated[
        str | None,
        typer.Option(
            help="by the best seed's final metric, '-' for highest first: "
            "-mAP50-95, mAP50-95, -mAP50, mAP50, -precision, precision, -recall, recall"
        ),
    ] = None,
    json_: JsonOption = False,
) -> None:
    """Your jobs, newest first (or by --sort)."""
    out = output(json_)
    with client() as carril:
        jobs = carril.jobs_list(state=state, kind=kind, tag=tag, dataset=dataset, sort=sort)
    out.emit(
        jobs,
        lambda: out.table(
            ["id", "kind", "state", "name", "tags", "progress", "created"],
            [
                [
                    j["id"],
                    j["kind"],
                    j["state"],
                    j.get("name") or "",
                    ",".join(j.get("tags") or []),
                    progress_line(j),
                    j["created_at"],
                ]
                for j in jobs
            ],
        ),
    )


def job_print(job: dict[str, Any], out: Output) -> None:
    out.say(f"job {job['id']}  {job['kind']}  {job['state']}")
    if job.get("name") or job.get("tags"):
        tags = " ".join(f"#{tag}" for tag in job.get("tags") or [])
        out.say(" ".join(part for part in (job.get("name") or "", tags) if part))
    if job.get("note"):
        out.say(f"note: {job['note']}")
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


@app.command("label")
def label(
    job_id: str,
    name: Annotated[str | None, typer.Option(help="its new name ('' clears it)")] = None,
    tags: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", metavar="<slug>", help="a slug; repeat for more; replaces all its tags"
        ),
    ] = None,
    clear_tags: Annotated[bool, typer.Option("--clear-tags", help="remove all its tags")] = False,
    note: Annotated[str | None, typer.Option(help="its new note ('' clears it)")] = None,
    json_: JsonOption = False,
) -> None:
    """Change a job's name, tags or note (yours only); what is not given stays."""
    out = output(json_)
    if clear_tags and tags:
        raise typer.BadParameter("give --tag or --clear-tags, not both", param_hint="--clear-tags")
    # An empty list clears the tags, so only --clear-tags sends one.
    new_tags = [] if clear_tags else list(tags or []) or None
    if name is None and new_tags is None and note is None:
        raise typer.BadParameter("give --name, --tag, --clear-tags or --note")
    with client() as carril:
        job = carril.job_label(job_id, name=name, tags=new_tags, note=note)
    out.emit(job, lambda: job_print(job, out))


@app.command("compare")
def compare(
    job_ids: Annotated[list[str], typer.Argument(help="2 to 10 training job ids")],
    json_: JsonOption = False,
) -> None:
    """Trainings' final metrics side by side, with differences from the first."""
    out = output(json_)
    with client() as carril:
        document = carril.jobs_compare(job_ids)
    out.emit(document, lambda: comparison_print(document, out))


def comparison_print(document: dict[str, Any], out: Output) -> None:
    """One column per run; each metric's value, and after the first run its difference
    from the first in brackets."""
    runs = document["runs"]
    rows = [
        [
            row["metric"],
            *(
                _cell(value, difference if i else None)
                for i, (value, difference) in enumerate(
                    zip(row["values"], row["differences"], strict=True)
                )
            ),
        ]
        for row in document["final_metrics"]
    ]
    out.table(["metric", *(run["title"] for run in runs)], rows, title="final metrics")
    for run in runs:
        out.say(f"{run['title']}: {run['id']}  {run['state']}")


def _cell(value: Any, difference: Any) -> str:
    if not isinstance(value, int | float):
        return "-"
    if isinstance(difference, int | float):
        return f"{value:.4f} ({difference:+.4f})"
    return f"{value:.4f}"
