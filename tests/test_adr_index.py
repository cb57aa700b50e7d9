"""docs/adr/README.md lists every decision record once, and every number up to the last."""

from __future__ import annotations

import re
from pathlib import Path

ADR = Path(__file__).resolve().parents[1] / "docs" / "adr"
ROW = re.compile(r"^\| (\d{4}) \| (.+) \| (.+) \|$", flags=re.M)


def _rows() -> dict[int, tuple[str, str]]:
    rows: dict[int, tuple[str, str]] = {}
    for number, decision, status in ROW.findall((ADR / "README.md").read_text()):
        assert int(number) not in rows, f"ADR {number} is listed twice"
        rows[int(number)] = (decision, status)
    return rows


def _records() -> dict[int, Path]:
    return {int(path.name[:4]): path for path in ADR.glob("[0-9][0-9][0-9][0-9]-*.md")}


def test_the_index_links_every_record_under_its_own_number_and_title() -> None:
    rows = _rows()
    for number, path in _records().items():
        assert number in rows, f"{path.name} is missing from docs/adr/README.md"
        decision, _ = rows[number]
        title = re.sub(r"^#\s*\d+\.\s*", "", path.read_text().splitlines()[0]).strip()
        assert decision == f"[{title}]({path.name})"


def test_every_number_up_to_the_last_is_a_record_or_said_to_be_unused() -> None:
    rows, records = _rows(), _records()
    assert sorted(rows) == list(range(1, max(records) + 1))
    for number, (_, status) in rows.items():
        assert (status == "unused") == (number not in records), f"ADR {number:04d}: {status}"
