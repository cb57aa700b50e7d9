"""What `carril train` and `carril ci-train` share: their training options and the one
training request those options become.

A command decorated with `@training_options` declares `request: TrainingRequest` instead
of the training options; the decorator puts the options into the signature typer reads, so
both commands offer the same options with the same help, and the command gets them as
one request, its seeds already parsed (a bad --seeds is a usage error, exit 2, with
nothing sent).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Annotated, Any

import typer

from carril_client.client import Client

# Name, annotation, default (`inspect.Parameter.empty`: required).
OPTIONS: list[tuple[str, Any, Any]] = [
    ("dataset", Annotated[str, typer.Option("--dataset", "-d", help="dataset id")], ...),
    (
        "model",
        Annotated[str, typer.Option("--model", "-m", help="architecture or model version id")],
        ...,
    ),
    ("epochs", Annotated[int | None, typer.Option()], None),
    ("seeds", Annotated[str | None, typer.Option(help="comma-separated, e.g. 1,2,3")], None),
    ("gpus", Annotated[int | None, typer.Option()], None),
    ("imgsz", Annotated[int | None, typer.Option()], None),
    ("batch", Annotated[int | None, typer.Option()], None),
    ("name", Annotated[str | None, typer.Option(help="what you call the run")], None),
    (
        "tags",
        Annotated[
            list[str] | None,
            typer.Option(
                "--tag",
                metavar="<slug>",
                help="a slug (letters, digits, '-', '_'); repeat for more",
            ),
        ],
        None,
    ),
    ("note", Annotated[str | None, typer.Option(help="a note kept with the run")], None),
    # Hyperparameters: unset ones are not sent, so the server's defaults apply (README,
    # "Training and inference settings", lists them and their bounds).
    ("patience", Annotated[int | None, typer.Option(help="0 turns early stopping off")], None),
    (
        "optimizer",
        Annotated[
            str | None,
            typer.Option(help="auto, SGD, Adam, AdamW, NAdam, RAdam or RMSProp"),
        ],
        None,
    ),
    ("lr0", Annotated[float | None, typer.Option(help="initial learning rate")], None),
    *(
        (name, Annotated[float | None, typer.Option(help=help_)], None)
        for name, help_ in [
            ("mosaic", "0 to 1 (probability)"),
            ("fliplr", "0 to 1 (probability)"),
            ("hsv_h", "0 to 1 (fraction)"),
            ("hsv_s", "0 to 1 (fraction)"),
            ("hsv_v", "0 to 1 (fraction)"),
            ("scale", "0 to 0.9 (+/- gain)"),
            ("degrees", "0 to 180 (+/- degrees)"),
        ]
    ),
]


@dataclass(frozen=True)
class TrainingRequest:
    dataset: str
    model: str
    epochs: int | None
    seeds: list[int] | None
    gpus: int | None
    imgsz: int | None
    batch: int | None
    name: str | None = None
    tags: list[str] | None = None
    note: str | None = None
    patience: int | None = None
    optimizer: str | None = None
    lr0: float | None = None
    mosaic: float | None = None
    fliplr: float | None = None
    hsv_h: float | None = None
    hsv_s: float | None = None
    hsv_v: float | None = None
    scale: float | None = None
    degrees: float | None = None

    def start(self, carril: Client) -> dict[str, Any]:
        """The training started: its job document (`{id, state, url}`)."""
        return carril.train(**asdict(self))


def seeds_parse(value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        return [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise typer.BadParameter(
            "seeds are integers separated by commas", param_hint="--seeds"
        ) from None


def training_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command(request, **own)` as a typer command taking the training options too."""
    own = [
        p
        for p in inspect.signature(command, eval_str=True).parameters.values()
        if p.name != "request"
    ]
    options = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=annotation,
            default=inspect.Parameter.empty if default is ... else default,
        )
        for name, annotation, default in OPTIONS
    ]
    parameters = [*options, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own)]

    @functools.wraps(command)
    def with_options(**given: Any) -> None:
        fields = {name: given.pop(name) for name, _, _ in OPTIONS}
        fields["seeds"] = seeds_parse(fields["seeds"])
        # No --tag at all is not sent (typer may give an empty list for it).
        fields["tags"] = list(fields["tags"] or []) or None
        return command(request=TrainingRequest(**fields), **given)

    with_options.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    with_options.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_options
