"""WSGI entry point (gunicorn carril_web.wsgi)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "carril_web.settings")
application = get_wsgi_application()

# A serving process takes over dataset validations whose process died (ADR 0025). Here,
# not in an AppConfig, so management commands and tests never start it.
from datasets.background import sweeper_start  # noqa: E402
from datasets.services import dataset_validations_resume  # noqa: E402

sweeper_start(dataset_validations_resume)
