"""Healthcheck of the reconciler container: healthy while its loop keeps finishing passes.

The loop records each completed pass in the database (the same row the web app's
`carril_web_reconciler_lag_seconds` is read from); a process that is alive but stuck
stops updating it and turns unhealthy here. Exit 0 healthy, 1 not.
"""

from __future__ import annotations

import os
import sys

# A pass every CARRIL_RECONCILE_INTERVAL_S (2 s by default); a minute without one is stuck.
MAX_LAG_S = 60.0


def main() -> int:
    # Run as a file from /usr/local/bin: the Django project is the working directory.
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "carril_web.settings")
    import django

    django.setup()
    from django.utils import timezone
    from jobs.selectors import reconciler_status

    last = reconciler_status().last_pass_at
    if last is None:
        print("no completed pass yet")
        return 1
    lag = (timezone.now() - last).total_seconds()
    print(f"last pass {lag:.1f} s ago")
    return 0 if lag < MAX_LAG_S else 1


if __name__ == "__main__":
    sys.exit(main())
