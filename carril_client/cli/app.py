"""`carril`: the command line of Carril. Exit codes: 0 ok, 1 a job failed / the gate
refused / the server refused the request, 2 usage, 3 server unreachable or token refused,
130 interrupted."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from carril_client.cli import ci, datasets, exits, gpus, jobs, models, tokens, training
from carril_client.cli.common import (
    _GLOBAL,
    JsonOption,
    client,
    job_follow,
    job_outcome,
    output,
)
from carril_client.cli.config import DEFAULT_URL, settings_load, settings_store
from carril_client.cli.jobs import job_print
from carril_client.client import Client
from carril_client.errors import CarrilError

app = typer.Typer(
    name="carril",
    help="Carril from the command line: datasets, training, models, inference, CI gates.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(datasets.app, name="datasets")
app.add_typer(jobs.app, name="jobs")
app.add_typer(models.app, name="models")
app.add_typer(tokens.app, name="tokens")
app.command("ci-train")(ci.ci_train)
app.command("gpus")(gpus.gpus)

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"}


@app.callback()
def root(json_: JsonOption = False) -> None:
    _GLOBAL["json"] = json_


@app.command("login")
def login(
    url: Annotated[str | None, typer.Option(help="the web app's address")] = None,
    username: Annotated[str | None, typer.Option("--username", "-u")] = None,
    password: Annotated[
        str | None, typer.Option(help="read from a prompt when not given", hidden=True)
    ] = None,
    token: Annotated[
        str | None, typer.Option(help="store this token instead of signing in", hidden=True)
    ] = None,
    password_stdin: Annotated[bool, typer.Option(help="read the password from stdin")] = False,
    json_: JsonOption = False,
) -> None:
    """Sign in and keep a new API token in your config folder (mode 0600)."""
    out = output(json_)
    url = (url or settings_load().url or DEFAULT_URL).rstrip("/")
    if token is None:
        username = username or typer.prompt("Username")
        if password_stdin:
            password = sys.stdin.readline().rstrip("\n")
        password = password or typer.prompt("Password", hide_input=True)
        with Client(url) as anonymous:
            # One token per machine: signing in again here replaces this machine's token.
            name = f"carril-cli@{socket.gethostname()}"[:100]
            issued = anonymous.token_obtain(username=username, password=password, name=name)
        token = issued["token"]
    with Client(url, token=token) as carril:
        carril.tokens_list()  # the token works before it is kept
    path = settings_store(url=url, token=token)
    out.emit(
        {"url": url, "config": str(path)}, lambda: out.say(f"signed in to {url}; token in {path}")
    )


@app.command("train")
@training.training_options
def train(
    request: training.TrainingRequest,
    wait: Annotated[bool, typer.Option("--wait", help="follow the job to its end")] = False,
    json_: JsonOption = False,
) -> None:
    """Start a training; with --wait, a live bar of seed, epoch and batch with the latest
    metrics, and exit 1 if the job does not succeed."""
    out = output(json_)
    with client() as carril:
        job = request.start(carril)
        if wait:
            job = job_follow(carril, job["id"], out)
    out.emit(
        job, lambda: job_print(job, out) if wait else out.say(f"job {job['id']} {job['state']}")
    )
    job_outcome(job, out)


def images_find(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        else:
            found.append(path)
    if not found:
        raise typer.BadParameter("no images there", param_hint="IMAGES_OR_FOLDER")
    return found


@app.command("infer")
def infer(
    images: Annotated[list[Path], typer.Argument(exists=True, help="images or folders")],
    model: Annotated[str | None, typer.Option("--model", "-m", help="model version id")] = None,
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="where to write")] = Path(
        "carril-out"
    ),
    conf: Annotated[float | None, typer.Option()] = None,
    imgsz: Annotated[int | None, typer.Option()] = None,
    json_: JsonOption = False,
) -> None:
    """Detect objects in images (on the serving version unless --model): writes
    detections.json and the annotated images into --out."""
    out = output(json_)
    with client() as carril:
        job = carril.infer(images_find(images), model_version=model, conf=conf, imgsz=imgsz)
        job = job_follow(carril, job["id"], out)
        job_outcome(job, out)
        detections = carril.job_detections(job["id"])
        written = detections_write(carril, detections, out_dir)
    document = {"job": job["id"], "out": str(out_dir), "files": [str(p) for p in written]}
    out.emit(document, lambda: _infer_print(detections, written, out))


def detections_write(carril: Client, detections: dict[str, Any], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    document = out_dir / "detections.json"
    document.write_text(json.dumps(detections, indent=2))
    written = [document]
    for image in detections.get("images") or []:
        if image.get("annotated_url"):
            name = Path(image.get("name") or Path(image["annotated_url"]).name).name
            written.append(carril.download(image["annotated_url"], out_dir / "annotated" / name))
    return written


def _infer_print(detections: dict[str, Any], written: list[Path], out: Any) -> None:
    out.table(
        ["image", "detections"],
        [[i.get("name"), len(i.get("detections") or [])] for i in detections.get("images") or []],
    )
    out.say(f"wrote {len(written)} file(s) into {written[0].parent}")


@app.command("evaluate")
def evaluate(
    model: Annotated[str, typer.Option("--model", "-m", help="model version id")],
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="dataset id")],
    split: Annotated[str | None, typer.Option(help="train, val (default) or test")] = None,
    imgsz: Annotated[int | None, typer.Option(help="default: the training size")] = None,
    conf: Annotated[float | None, typer.Option(help="default: 0.001")] = None,
    iou: Annotated[float | None, typer.Option(help="NMS IoU; default: 0.7")] = None,
    json_: JsonOption = False,
) -> None:
    """Evaluate a model version on a dataset split with ultralytics' validator (an
    evaluate job) and print its overall and per-class numbers."""
    out = output(json_)
    with client() as carril:
        job = carril.evaluate(
            model_version=model, dataset=dataset, split=split, imgsz=imgsz, conf=conf, iou=iou
        )
        job = job_follow(carril, job["id"], out)
        job_outcome(job, out)
        evaluation = carril.job_evaluation(job["id"])
    out.emit(evaluation, lambda: ci.evaluation_print(evaluation, out))


def main() -> None:
    try:
        app()
    except CarrilError as exc:
        out = output(bool(_GLOBAL.get("json")) or "--json" in sys.argv)
        out.error(exc)
        sys.exit(exits.exit_code_for(exc))
