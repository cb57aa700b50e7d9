"""The Carril web platform: datasets, model registry, jobs, REST API and browser UI."""

from __future__ import annotations

import sys
from pathlib import Path

# The web app reads the GPU service's answers with the documents defined once in
# `gpu_service/contract.py` (standard library only), which lives beside `web/` in the
# repository and in the web image. Every entry point (manage.py, gunicorn, tests) imports
# this package first, so the folder holding both is put on the path here, once.
_SOURCE_ROOT = str(Path(__file__).resolve().parent.parent.parent)
if _SOURCE_ROOT not in sys.path:
    sys.path.append(_SOURCE_ROOT)
