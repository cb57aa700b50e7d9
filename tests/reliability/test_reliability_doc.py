"""docs/reliability.md names the tests that prove each promise; each must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"


def _references() -> set[tuple[str, str]]:
    return set(re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", DOC.read_text()))


def test_every_test_the_reliability_doc_names_exists() -> None:
    references = _references()
    assert len(references) > 50
    missing = [
        f"{path}::{name}"
        for path, name in sorted(references)
        if not (ROOT / path).is_file()
        or not re.search(rf"^def {name}\(", (ROOT / path).read_text(), flags=re.M)
    ]
    assert missing == []


def test_every_reliability_and_security_test_is_in_the_doc() -> None:
    named = {(path, name) for path, name in _references()}
    ours = {
        (str(path.relative_to(ROOT)), name)
        for folder in ("tests/reliability", "tests/security")
        for path in (ROOT / folder).glob("test_*.py")
        for name in re.findall(r"^def (test_\w+)\(", path.read_text(), flags=re.M)
    }
    ours.discard(
        (
            "tests/reliability/test_reliability_doc.py",
            "test_every_test_the_reliability_doc_names_exists",
        )
    )
    ours.discard(
        (
            "tests/reliability/test_reliability_doc.py",
            "test_every_reliability_and_security_test_is_in_the_doc",
        )
    )
    assert sorted(ours - named) == []
