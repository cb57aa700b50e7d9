"""The suite's outputs: the Markdown table and the docs' table block."""

from __future__ import annotations

from pathlib import Path

from bench.results import (
    DOCS_BEGIN,
    DOCS_END,
    docs_update,
    markdown_table,
    outcome,
    results_write,
    skipped,
)

MACHINE = {"cpu": "test cpu", "cores": 2, "gpu_service_runtime": "simulated"}


def _results() -> list[dict]:
    return [
        outcome(
            name="polling",
            title="Polling",
            runtime="simulated",
            figure="req/s",
            value=120.0,
            unit="req/s",
            baseline_figure="bare view",
            baseline=300.0,
            ratio=0.4,
            target=">= 0.5x bare view",
            met=False,
        ),
        skipped(
            name="dataparallel",
            title="DataParallel",
            runtime="simulated",
            reason="no CUDA",
            target="reported",
        ),
    ]


def test_the_table_has_one_row_per_result_and_marks_a_missed_target() -> None:
    table = markdown_table(_results()).splitlines()

    assert len(table) == 4
    assert "| **no** |" in table[2]
    assert "120 req/s" in table[2]
    assert "300 req/s (bare view)" in table[2]
    assert "skipped: no CUDA" in table[3]


def test_the_docs_table_is_replaced_between_its_markers_only(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    docs.write_text(f"# Title\n\nbefore\n{DOCS_BEGIN}\nold table\n{DOCS_END}\nafter\n")

    assert docs_update(docs=docs, results=_results(), machine=MACHINE, argv="python -m bench")

    text = docs.read_text()
    assert "old table" not in text
    assert text.startswith("# Title\n\nbefore\n")
    assert text.endswith(f"{DOCS_END}\nafter\n")
    assert "test cpu" in text
    assert "Polling" in text


def test_a_docs_file_without_markers_is_left_alone(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    docs.write_text("no markers\n")

    assert not docs_update(docs=docs, results=_results(), machine=MACHINE, argv="x")
    assert docs.read_text() == "no markers\n"


def test_results_are_written_as_json_and_markdown(tmp_path: Path) -> None:
    import json

    json_path, md_path = results_write(
        out=tmp_path, results=_results(), machine=MACHINE, argv="python -m bench"
    )

    document = json.loads(json_path.read_text())
    assert [r["name"] for r in document["results"]] == ["polling", "dataparallel"]
    assert document["machine"]["gpu_service_runtime"] == "simulated"
    assert "| 1 | Polling" in md_path.read_text()
