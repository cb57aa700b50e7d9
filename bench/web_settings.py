"""Bench-only Django settings: the real web app's settings, plus the bare view's route.

Used by the polling benchmark so the bare view runs in the same gunicorn process, with
the same middleware, as the real job status view it is compared with.
"""

from __future__ import annotations

from carril_web.settings import *  # noqa: F403

ROOT_URLCONF = "bench.web_urls"
