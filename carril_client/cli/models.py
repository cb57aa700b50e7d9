"""`carril models list|show|promote|retire|export|download`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from carril_client.cli.common import JsonOption, client, job_follow, job_outcome, output
from carril_client.cli.output import Output
from carril_client.client import Client

app = typer.Typer(help="The model registry: versions, stages, exports.", no_args_is_help=True)
METRICS = ("precision", "recall", "mAP50", "mAP50-95")


def metric(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, int | float) else ""


@app.command("list")
def list_(
    stage: Annotated[str | None, typer.Option(help="candidate, serving or retired")] = None,
    json_: JsonOption = False,
) -> None:
    """Model versions with their stage and validation numbers."""
    out = output(json_)
    with client() as carril:
        versions = carril.models_list(stage=stage)
    out.emit(
        versions,
        lambda: out.table(
            ["id", "name", "stage", *METRICS],
            [
                [v["id"], v["name"], v["stage"], *(metric(v["metrics"].get(k)) for k in METRICS)]
                for v in versions
            ],
        ),
    )


def version_print(version: dict[str, Any], out: Output) -> None:
    out.say(f"model version {version['id']}  {version['name']}  {version['stage']}")
    out.say(f"source: {version['source']}  job: {version.get('source_job') or '-'}")
    out.say("  ".join(f"{k} {metric(version['metrics'].get(k))}" for k in METRICS))
    for event in version.get("events") or []:
        out.say(
            f"  {event['created_at']} {event['action']} -> {event['to_stage']}: {event['reason']}"
        )


@app.command("show")
def show(version_id: str, json_: JsonOption = False) -> None:
    """One model version with its history of stages."""
    out = output(json_)
    with client() as carril:
        version = carril.model_get(version_id)
    out.emit(version, lambda: version_print(version, out))


def _stage(version_id: str, stage: str, reason: str, json_: bool) -> None:
    out = output(json_)
    with client() as carril:
        version = carril.model_stage(version_id, stage=stage, reason=reason)
    out.emit(version, lambda: out.say(f"model version {version['id']} is {version['stage']}"))


@app.command("promote")
def promote(
    version_id: str,
    reason: Annotated[str, typer.Option("--reason", "-r", help="why (kept in the history)")],
    json_: JsonOption = False,
) -> None:
    """Make a version the serving one (administrators)."""
    _stage(version_id, "serving", reason, json_)


@app.command("retire")
def retire(
    version_id: str,
    reason: Annotated[str, typer.Option("--reason", "-r", help="why (kept in the history)")],
    json_: JsonOption = False,
) -> None:
    """Retire a version (administrators)."""
    _stage(version_id, "retired", reason, json_)


@app.command("export")
def export(
    version_id: str,
    format_: Annotated[str, typer.Option("--format", "-f", help="onnx, openvino, torchscript")],
    imgsz: Annotated[int | None, typer.Option(help="input size")] = None,
    wait: Annotated[bool, typer.Option(help="wait for the export job")] = True,
    json_: JsonOption = False,
) -> None:
    """Export a version as a job (issue 14's endpoint) and wait for it."""
    out = output(json_)
    with client() as carril:
        job = carril.model_export(version_id, format=format_, imgsz=imgsz)
        if wait:
            job = job_follow(carril, job["id"], out)
    out.emit(job, lambda: out.say(f"export job {job['id']} {job['state']}"))
    job_outcome(job, out)


@app.command("download")
def download(
    version_id: str,
    out_path: Annotated[Path | None, typer.Option("--out", "-o", help="file to write")] = None,
    format_: Annotated[str, typer.Option("--format", "-f", help="pt or an export's format")] = "pt",
    json_: JsonOption = False,
) -> None:
    """Download a version's weights or one of its exports."""
    out = output(json_)
    dest = out_path or Path(f"{version_id}.{format_}")
    with client() as carril, out.bytes_bar(f"download {dest.name}") as bar:
        written = _download(carril, version_id, dest, format_, bar)
    document = {"model_version": version_id, "format": format_, "path": str(written)}
    out.emit(document, lambda: out.say(f"wrote {written}"))


def _download(carril: Client, version_id: str, dest: Path, format_: str, bar: Any) -> Path:
    return carril.model_download(version_id, dest, format=format_, progress=bar)
