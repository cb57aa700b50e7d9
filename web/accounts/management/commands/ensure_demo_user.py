"""`manage.py ensure_demo_user`: the ordinary user `make run` signs you in as."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand

from accounts.services import demo_user_ensure


class Command(BaseCommand):
    help = "Create the demo user (an ordinary user); print its password only when set."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="demo")

    def handle(self, *args, **options) -> None:
        password = os.environ.get("CARRIL_DEMO_PASSWORD") or None
        user, shown = demo_user_ensure(username=options["username"], password=password)
        if shown is None:
            self.stdout.write(f"demo user {user.get_username()!r} already set up")
        else:
            self.stdout.write(f"demo user {user.get_username()!r} password: {shown}")
