"""manage.py prune [--dry-run]: apply the retention policy and print what it frees."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from retention.prune import prune_run


class Command(BaseCommand):
    help = "Delete what the storage retention policy says may go (docs/operations.md)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="only print what would go")

    def handle(self, *args, dry_run: bool = False, **options) -> None:
        report = prune_run(dry_run=dry_run)
        verb = "would free" if dry_run else "freed"
        for item in report.items:
            self.stdout.write(f"{verb}\t{item.bytes}\t{item.rule}\t{item.path}\t{item.why}")
        for item in report.skipped:
            self.stdout.write(f"kept\t0\t{item.rule}\t{item.path}\tprotected since planned")
        self.stdout.write(f"total {verb}: {report.bytes} bytes in {len(report.items)} items")
