"""The vendored axe-core is the pinned release, byte for byte, with its licences."""

from __future__ import annotations

import base64
import hashlib
import json

from tests.support.accessibility import AXE_DIR, AXE_JS


def test_the_vendored_axe_core_is_the_pinned_release() -> None:
    pin = json.loads((AXE_DIR / "PIN.json").read_text())
    digest = base64.b64encode(hashlib.sha256(AXE_JS.read_bytes()).digest()).decode()
    assert pin["files"]["axe.min.js"] == f"sha256-{digest}"
    # The file names its version in its first line; the pin and the file agree.
    assert AXE_JS.read_text(encoding="utf-8").startswith(f"/*! axe v{pin['version']}\n")


def test_the_vendored_axe_core_keeps_its_licences() -> None:
    assert "Mozilla Public License" in (AXE_DIR / "LICENSE").read_text()
    assert (AXE_DIR / "LICENSE-3RD-PARTY.txt").stat().st_size > 0
