"""With CARRIL_LOG_FORMAT=json every log line is one JSON object carrying the request id."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.web.carril_web.test_web_settings import ROOT

SCRIPT = """
import django, logging
django.setup()
from django.test import Client
logging.getLogger("carril.test").info("outside a request")
Client().get("/api/v1/nothing/", HTTP_X_REQUEST_ID="req-42")
"""


def test_json_logs_carry_the_request_id(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARRIL_")}
    env.pop("DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT / "web",
        env={
            **env,
            "DJANGO_SETTINGS_MODULE": "carril_web.settings",
            "CARRIL_STORAGE": str(tmp_path),
            "CARRIL_LOG_FORMAT": "json",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.strip()]
    outside = next(line for line in lines if line["message"] == "outside a request")
    assert outside["request_id"] == "-"
    not_found = next(line for line in lines if "Not Found" in line["message"])
    assert not_found["request_id"] == "req-42"
    # The same field names as the GPU service's JSON lines, so one query reads both.
    assert not_found["level"] == "WARNING"
    assert {"time", "level", "logger", "message", "request_id"} <= set(not_found)
