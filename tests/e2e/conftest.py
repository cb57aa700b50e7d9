"""Fixtures for the browser test: Debian's Chromium through Python playwright (never a
downloaded browser), and the whole platform running for real."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from carril_stack.commands import ROOT
from tests.support.stack import Stack

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "test-artifacts" / "e2e"


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is not installed (apt-get install chromium)"
        if os.environ.get("CARRIL_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CARRIL_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    return CHROMIUM


# Module scope: playwright's sync API keeps an event loop running in this thread until it
# stops, and tests after the browser module that call asyncio.run() must not find one.
@pytest.fixture(scope="module")
def browser(chromium_path: Path) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium_path), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    storage = tmp_path_factory.mktemp("e2e") / "storage"
    platform = Stack(storage=storage, password="e2e-password-for-alice-93")
    try:
        yield platform.start()
    finally:
        platform.stop()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
