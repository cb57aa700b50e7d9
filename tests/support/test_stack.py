"""The stack harness itself: the web side gets a database of its own, on PostgreSQL when
DATABASE_URL points there (so CI checks the multi-process tests on it), and stop drops it."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import psycopg

from tests.support.database import POSTGRES_SCHEMES
from tests.support.stack import Stack

SERVER = os.environ.get("DATABASE_URL", "")
ON_POSTGRES = urlsplit(SERVER).scheme in POSTGRES_SCHEMES


def test_the_web_side_runs_on_a_database_of_its_own_which_stop_drops(tmp_path):
    stack = Stack(storage=tmp_path / "storage")
    try:
        stack.prepare()
        done = stack.script(
            "from django.db import connection as c\nprint(c.vendor, c.settings_dict['NAME'])"
        )
        assert done.returncode == 0, done.stderr
        vendor, name = done.stdout.split()[-2:]
        assert stack.web_jobs() == {}  # migrated, and the test process reads the same one
    finally:
        stack.stop()
    if ON_POSTGRES:
        assert vendor == "postgresql"
        assert name == stack.database.name != urlsplit(SERVER).path.lstrip("/")
        with psycopg.connect(urlunsplit(urlsplit(SERVER)._replace(path="/postgres"))) as server:
            found = server.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            assert found.fetchone() is None
    else:
        assert vendor == "sqlite"
        assert name == str(tmp_path / "storage" / "web.sqlite3")
