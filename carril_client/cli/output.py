"""What the command prints: tables and bars for a person at a terminal, plain text when
piped (no colours, no bars), one JSON document with --json."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from carril_client.errors import CarrilError


class Output:
    def __init__(self, *, json_mode: bool = False) -> None:
        self.json_mode = json_mode
        self.console = Console(highlight=False)
        self.err = Console(stderr=True, highlight=False)

    @property
    def interactive(self) -> bool:
        """Bars and live displays only for a person at a terminal."""
        return self.err.is_terminal and not self.json_mode

    def document(self, value: Any) -> None:
        sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")
        sys.stdout.flush()

    def emit(self, value: Any, render: Callable[[], None]) -> None:
        """The JSON document with --json, else the human rendering."""
        if self.json_mode:
            self.document(value)
        else:
            render()

    def say(self, text: str) -> None:
        if not self.json_mode:
            self.console.print(text, markup=False)

    def note(self, text: str) -> None:
        """Progress notes go to stderr, so stdout stays the result."""
        if not self.json_mode:
            self.err.print(text, markup=False)

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
        table = Table(*columns, title=title or None, box=box.SIMPLE if self.interactive else None)
        for row in rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        self.console.print(table)

    def error(self, exc: CarrilError) -> None:
        if self.json_mode:
            self.document(
                {"error": {"code": exc.code, "message": exc.message, "details": exc.details}}
            )
        else:
            self.err.print(f"error: {exc.code}: {exc.message}", markup=False)

    @contextlib.contextmanager
    def bytes_bar(self, description: str) -> Iterator[Callable[[int, int], None] | None]:
        """A transfer bar (bytes, speed, time left) at a terminal; nothing otherwise."""
        if not self.interactive:
            yield None
            return
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=self.err, transient=False) as bar:
            task = bar.add_task(description, total=None)

            def update(sent: int, total: int) -> None:
                bar.update(task, completed=sent, total=total or None)

            yield update
