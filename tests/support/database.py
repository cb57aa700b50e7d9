"""The web app's database for one stack of real processes.

With `DATABASE_URL` pointing at PostgreSQL, each stack gets a database of its own on that
server, created at start and dropped at stop, so CI's PostgreSQL run checks delivery,
the reconciler and the soak on the database production uses. Without it (or with a
SQLite URL), a SQLite file in the stack's storage, as `make run` has by default.

The test process reads and pokes it with the plain drivers (sqlite3, psycopg), never
through Django, whose database layer belongs to pytest-django in the test process.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

POSTGRES_SCHEMES = ("postgres", "postgresql", "pgsql")
NAME_PREFIX = "carril_stack_"  # leftovers of a killed test run are easy to find and drop


class WebDatabase:
    def __init__(self, *, storage: Path, server_url: str | None = None) -> None:
        server_url = os.environ.get("DATABASE_URL", "") if server_url is None else server_url
        self.postgres = urlsplit(server_url).scheme in POSTGRES_SCHEMES
        self._created = False
        if self.postgres:
            self.name = f"{NAME_PREFIX}{uuid.uuid4().hex[:12]}"
            self._server = urlsplit(server_url)
            self.url = urlunsplit(self._server._replace(path=f"/{self.name}"))
        else:
            self.path = Path(storage).resolve() / "web.sqlite3"
            self.name = str(self.path)
            self.url = f"sqlite:///{self.path}"

    @property
    def engine(self) -> str:
        return "postgresql" if self.postgres else "sqlite"

    # --- life ---------------------------------------------------------------------------
    def create(self) -> None:
        """Create the PostgreSQL database (the SQLite file comes with the migrations)."""
        if self.postgres and not self._created:
            with self._admin() as admin:
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
            self._created = True

    def drop(self) -> None:
        if self.postgres and self._created:
            # FORCE: a process killed by the test may have left a connection behind.
            with self._admin() as admin:
                admin.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(self.name)
                    )
                )
            self._created = False

    def _admin(self) -> psycopg.Connection[Any]:
        """A connection to the server for CREATE/DROP DATABASE: DATABASE_URL's own
        database if it exists, else the `postgres` maintenance database."""
        try:
            return psycopg.connect(urlunsplit(self._server), autocommit=True)
        except psycopg.OperationalError:
            return psycopg.connect(
                urlunsplit(self._server._replace(path="/postgres")), autocommit=True
            )

    # --- reading and poking ----------------------------------------------------------------
    def rows(self, query: str) -> list[dict[str, Any]]:
        if self.postgres:
            with psycopg.connect(self.url, row_factory=dict_row) as db:
                return list(db.execute(query).fetchall())
        with sqlite3.connect(self.path, timeout=30) as db:
            db.row_factory = sqlite3.Row
            return [dict(row) for row in db.execute(query).fetchall()]

    def execute(self, statement: str) -> None:
        if self.postgres:
            with psycopg.connect(self.url) as db:
                db.execute(statement)  # committed when the block ends
            return
        with sqlite3.connect(self.path, timeout=30) as db:
            db.execute(statement)
