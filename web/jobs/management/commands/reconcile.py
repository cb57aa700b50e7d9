"""`manage.py reconcile`: run the reconciler loop (or one pass with --once)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from jobs.reconciler import Reconciler


class Command(BaseCommand):
    help = "Deliver submitted jobs to the GPU service and keep job rows up to date."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--once", action="store_true", help="one pass, then exit")
        parser.add_argument("--interval", type=float, default=None, help="seconds between passes")

    def handle(self, *args, **options) -> None:
        interval = options["interval"] or settings.CARRIL_RECONCILE_INTERVAL_S
        reconciler = Reconciler(interval_s=interval)
        if not options["once"]:
            reconciler.install_signal_handlers()
            self.stdout.write(f"reconciler running every {interval:g}s")
        reconciler.run(once=options["once"])
