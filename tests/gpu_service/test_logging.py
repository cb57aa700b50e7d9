from __future__ import annotations

import json
import logging

import pytest

from gpu_service.logging import job_logged, logging_configure, request_id_var
from gpu_service.settings import load_settings


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_carry_the_request_id(tmp_path, capsys, restore_logging):
    logging_configure(
        settings=load_settings(storage=tmp_path, gpu_service_token="t" * 32, log_format="json")
    )
    token = request_id_var.set("req-42")
    try:
        with job_logged("abc"):
            logging.getLogger("carril.test").warning("job %s queued", "abc")
    finally:
        request_id_var.reset(token)
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert line["message"] == "job abc queued"
    assert line["request_id"] == "req-42"
    assert line["job"] == "abc"
    assert line["level"] == "WARNING"


def test_text_lines_show_a_dash_outside_requests_and_jobs(tmp_path, capsys, restore_logging):
    logging_configure(settings=load_settings(storage=tmp_path, gpu_service_token="t" * 32))
    logging.getLogger("carril.test").warning("hello")
    assert "[-] [job -] carril.test: hello" in capsys.readouterr().err
