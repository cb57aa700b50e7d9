"""`carril datasets upload|list|show`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from carril_client.cli import exits
from carril_client.cli.common import JsonOption, client, output
from carril_client.cli.output import Output
from carril_client.errors import DatasetInvalid

app = typer.Typer(help="Upload, list and read datasets.", no_args_is_help=True)


@app.command("upload")
def upload(
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="a YOLO dataset zip")],
    name: Annotated[str, typer.Option("--name", "-n", help="the dataset's name")],
    json_: JsonOption = False,
) -> None:
    """Upload a dataset zip (streamed, with a progress bar) and wait for its validation.
    A refused dataset prints the report by file and line and exits 1."""
    out = output(json_)
    with client() as carril:
        try:
            with out.bytes_bar(f"upload {path.name}") as bar:
                dataset = carril.dataset_upload(path, name=name, progress=bar)
        except DatasetInvalid as exc:
            report = exc.details.get("report") or {}
            out.emit(
                {"error": {"code": exc.code, "message": exc.message, **exc.details}},
                lambda: report_print(report, out),
            )
            raise typer.Exit(exits.FAILED) from None
    out.emit(dataset, lambda: dataset_print(dataset, out))


def report_print(report: dict[str, Any], out: Output) -> None:
    problems = report.get("problems") or []
    out.err.print(
        f"The dataset was refused: {report.get('problems_total', len(problems))} problem(s).",
        markup=False,
    )
    for problem in problems:
        where = problem.get("file") or "(archive)"
        if problem.get("line"):
            where = f"{where}:{problem['line']}"
        out.err.print(f"  {where}: {problem.get('code')}: {problem.get('message')}", markup=False)
        _details_print(problem.get("details") or {}, out)
    more = int(report.get("problems_total") or 0) - len(problems)
    if more > 0:
        out.err.print(f"  ... and {more} more", markup=False)


def _details_print(details: dict[str, Any], out: Output) -> None:
    """Labels found in the wrong place, by name, and the layout the server expects."""
    files = details.get("files") or []
    for name in files:
        out.err.print(f"      {name}", markup=False)
    rest = int(details.get("files_total") or 0) - len(files)
    if rest > 0:
        out.err.print(f"      ... and {rest} more", markup=False)
    if details.get("expected_layout"):
        out.err.print("    expected layout:", markup=False)
        for line in str(details["expected_layout"]).splitlines():
            out.err.print(f"      {line}", markup=False)


def dataset_print(dataset: dict[str, Any], out: Output) -> None:
    out.say(f"dataset {dataset['id']}  {dataset['name']}  ({dataset.get('state', 'ready')})")
    out.say(f"classes: {', '.join(dataset.get('classes') or [])}")
    splits = dataset.get("splits") or {}
    out.table(
        ["split", "images", "labels", "instances"],
        [
            [name, s.get("images"), s.get("labels"), s.get("instances")]
            for name, s in splits.items()
        ],
    )
    for warning in (dataset.get("report") or {}).get("warnings") or []:
        out.say(f"warning: {warning.get('code')}: {warning.get('message')}")


@app.command("list")
def list_(json_: JsonOption = False) -> None:
    """Your datasets (all of them for an administrator)."""
    out = output(json_)
    with client() as carril:
        datasets = carril.datasets_list()
    out.emit(
        datasets,
        lambda: out.table(
            ["id", "name", "state", "classes", "images", "created"],
            [
                [
                    d["id"],
                    d["name"],
                    d.get("state", "ready"),
                    len(d.get("classes") or []),
                    ((d.get("report") or {}).get("totals") or {}).get("images"),
                    d["created_at"],
                ]
                for d in datasets
            ],
        ),
    )


@app.command("show")
def show(dataset_id: str, json_: JsonOption = False) -> None:
    """One dataset: classes, splits, its validation report."""
    out = output(json_)
    with client() as carril:
        dataset = carril.dataset_get(dataset_id)
    out.emit(dataset, lambda: dataset_print(dataset, out))
