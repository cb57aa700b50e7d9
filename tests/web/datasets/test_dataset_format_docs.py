"""The README's "Dataset format" shows the layouts and the split rule the code uses, and
docs/api-errors.md lists every code a dataset report can carry."""

from __future__ import annotations

import re
from pathlib import Path

from datasets.layout import (
    AUTO_SPLIT_RULE,
    EXPECTED_LAYOUT,
    ONE_SPLIT_LAYOUT,
    ROBOFLOW_LAYOUT,
)

ROOT = Path(__file__).resolve().parents[3]


def readme_section() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("## Dataset format", 1)[1].split("\n## ", 1)[0]


def test_the_readme_shows_the_layouts_the_code_accepts_and_its_split_rule():
    section = readme_section()
    for tree in (EXPECTED_LAYOUT, ROBOFLOW_LAYOUT, ONE_SPLIT_LAYOUT):
        assert f"```text\n{tree}\n```" in section
    assert " ".join(AUTO_SPLIT_RULE.split()) in " ".join(section.split())


def test_docs_api_errors_lists_every_dataset_report_code():
    # Written as `code="..."`, as a label line's `return "code", message`, or as a choice.
    patterns = (r'code="([a-z_]+)"', r'return "([a-z_]+)", f?"', r'"([a-z_]+)" if \w+ else "')
    codes = set()
    for path in (ROOT / "web" / "datasets").glob("*.py"):
        for pattern in patterns:
            codes |= set(re.findall(pattern, path.read_text()))
    assert {"labels_misplaced", "label_fields", "absolute_path", "mostly_background"} <= codes
    text = (ROOT / "docs" / "api-errors.md").read_text()
    missing = sorted(code for code in codes if f"`{code}`" not in text)
    assert missing == []
