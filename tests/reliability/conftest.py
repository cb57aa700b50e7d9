"""The web suite's fixtures, for the reliability tests that drive the web app in-process."""

from __future__ import annotations

from tests.web import conftest as web

storage = web.storage
owner = web.owner
fake_gpu = web.fake_gpu
