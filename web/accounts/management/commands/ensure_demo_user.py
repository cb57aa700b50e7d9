"""`manage.py ensure_demo_user`: the user `make run` signs you in as (an administrator,
with `--administrator`, as `make run` asks), or Compose's ordinary demo user."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand

from accounts.services import demo_user_ensure


class Command(BaseCommand):
    help = "Create the demo user; print its password only when set."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument(
            "--administrator",
            action="store_true",
            help="make it a superuser (make run's single-user development install)",
        )

    def handle(self, *args, **options) -> None:
        password = os.environ.get("CARRIL_DEMO_PASSWORD") or None
        user, shown = demo_user_ensure(
            username=options["username"], password=password, administrator=options["administrator"]
        )
        role = "administrator" if user.is_superuser else "user"
        if shown is None:
            self.stdout.write(f"demo {role} {user.get_username()!r} already set up")
        else:
            self.stdout.write(f"demo {role} {user.get_username()!r} password: {shown}")
