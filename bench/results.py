"""What a benchmark returns, and the files the suite writes from it.

A benchmark's result is one plain dict (JSON as is): the headline figure next to its
baseline, the ratio, the target and whether it was met, plus any detail figures. A
skipped benchmark says why. `latest.json` holds every result and the machine;
`latest.md` is the same as a table, which `--docs` also copies into docs/benchmarks.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DOCS_BEGIN = "<!-- bench:table:begin -->"
DOCS_END = "<!-- bench:table:end -->"


def outcome(
    *,
    name: str,
    title: str,
    runtime: str,
    figure: str,
    value: float,
    baseline_figure: str,
    baseline: float | None,
    ratio: float | None,
    target: str,
    met: bool | None,
    unit: str = "",
    details: dict[str, Any] | None = None,
    notes: str = "",
) -> dict[str, Any]:
    return {
        "name": name,
        "title": title,
        "runtime": runtime,
        "skipped": None,
        "figure": figure,
        "value": _round(value),
        "unit": unit,
        "baseline_figure": baseline_figure,
        "baseline": _round(baseline),
        "ratio": _round(ratio),
        "target": target,
        "met": met,
        "details": details or {},
        "notes": notes,
    }


def skipped(*, name: str, title: str, runtime: str, reason: str, target: str) -> dict[str, Any]:
    return {
        "name": name,
        "title": title,
        "runtime": runtime,
        "skipped": reason,
        "figure": "",
        "value": None,
        "unit": "",
        "baseline_figure": "",
        "baseline": None,
        "ratio": None,
        "target": target,
        "met": None,
        "details": {},
        "notes": reason,
    }


def failed(*, name: str, title: str, error: str) -> dict[str, Any]:
    """A benchmark that raised: recorded, so one broken part does not lose the others."""
    result = skipped(name=name, title=title, runtime="?", reason=f"error: {error}", target="")
    result["error"] = error
    return result


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _cell(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    text = f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{text} {unit}".strip()


def markdown_table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| # | benchmark | Carril | baseline | ratio | target | met |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for number, result in enumerate(results, start=1):
        if result["skipped"]:
            lines.append(
                f"| {number} | {result['title']} | skipped: {result['skipped']} | - | - | "
                f"{result['target']} | - |"
            )
            continue
        met = {True: "yes", False: "**no**", None: "-"}[result["met"]]
        baseline = (
            f"{_cell(result['baseline'], result['unit'])} ({result['baseline_figure']})"
            if result["baseline"] is not None
            else "-"
        )
        lines.append(
            f"| {number} | {result['title']}: {result['figure']} | "
            f"{_cell(result['value'], result['unit'])} | {baseline} | "
            f"{_cell(result['ratio'])} | {result['target']} | {met} |"
        )
    return "\n".join(lines) + "\n"


def machine_lines(machine: dict[str, Any]) -> str:
    return "\n".join(f"- {key}: {value}" for key, value in machine.items()) + "\n"


def markdown_report(*, results: list[dict[str, Any]], machine: dict[str, Any], argv: str) -> str:
    details = []
    for result in results:
        if result["details"] or result["notes"]:
            details.append(f"### {result['title']}\n")
            if result["notes"]:
                details.append(f"{result['notes']}\n")
            details.extend(f"- {key}: {value}" for key, value in result["details"].items())
            details.append("")
    return (
        f"# Carril benchmarks: latest run\n\n"
        f"Command: `{argv}`\n\n"
        f"{markdown_table(results)}\n"
        f"## Machine\n\n{machine_lines(machine)}\n"
        f"## Details\n\n" + "\n".join(details) + "\n"
    )


def results_write(
    *, out: Path, results: list[dict[str, Any]], machine: dict[str, Any], argv: str
) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "latest.json"
    md_path = out / "latest.md"
    document = {"argv": argv, "machine": machine, "results": results}
    json_path.write_text(json.dumps(document, indent=2) + "\n")
    md_path.write_text(markdown_report(results=results, machine=machine, argv=argv))
    return json_path, md_path


def docs_update(
    *, docs: Path, results: list[dict[str, Any]], machine: dict[str, Any], argv: str
) -> bool:
    """Replace the table between the markers in docs/benchmarks.md; False without markers."""
    text = docs.read_text()
    if DOCS_BEGIN not in text or DOCS_END not in text:
        return False
    head, rest = text.split(DOCS_BEGIN, 1)
    _, tail = rest.split(DOCS_END, 1)
    block = (
        f"{DOCS_BEGIN}\n"
        f"Command: `{argv}`\n\n"
        f"{markdown_table(results)}\n"
        f"Machine:\n\n{machine_lines(machine)}"
        f"{DOCS_END}"
    )
    docs.write_text(head + block + tail)
    return True
