"""The README's configuration table names every environment variable the code reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    "carril_client",
    "carril_stack",
    "gpu_service",
    "web",
    "bench",
    "carril_run.py",
    "carril_cluster.py",
    "deploy",
    "scripts",
    "docker-compose.yml",
    "docker-compose.simulated.yml",
    "docker-compose.cluster.yml",
    "Dockerfile.web",
    "Dockerfile.gpu",
]
VARIABLE = re.compile(r"\b(CARRIL_[A-Z0-9_]+|DATABASE_URL)\b")
# Variables that only tests set, to steer the test harness itself.
TEST_ONLY = {"CARRIL_REQUIRE_BROWSER"}


def source_files() -> list[Path]:
    files: list[Path] = []
    for name in SOURCES:
        path = ROOT / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [p for p in path.rglob("*") if p.suffix in {".py", ".sh", ".yml", ".yaml"}]
    return [f for f in files if "migrations" not in f.parts]


def variables_read_by_code() -> set[str]:
    found: set[str] = set()
    for path in source_files():
        found |= set(VARIABLE.findall(path.read_text(errors="replace")))
    # pydantic-settings fields become CARRIL_<FIELD> without the literal name in code.
    try:
        from gpu_service.settings import Settings
    except ImportError:
        return found - TEST_ONLY
    prefix = Settings.model_config.get("env_prefix", "")
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias if isinstance(info.validation_alias, str) else None
        found.add((alias or f"{prefix}{name}").upper())
    return found - TEST_ONLY


def variables_in_readme_table() -> set[str]:
    table = (ROOT / "README.md").read_text().split("## Configuration", 1)[1]
    return set(re.findall(r"^\| `([A-Z0-9_]+)` \|", table, flags=re.MULTILINE))


def test_every_variable_the_code_reads_is_in_the_readme_table():
    missing = variables_read_by_code() - variables_in_readme_table()
    assert not missing, f"add these to README's configuration table: {sorted(missing)}"


def test_the_readme_table_lists_no_variable_the_code_does_not_read():
    stale = variables_in_readme_table() - variables_read_by_code()
    assert not stale, f"README lists variables nothing reads: {sorted(stale)}"


def test_the_readme_gives_the_run_and_test_commands_at_the_top():
    head = (ROOT / "README.md").read_text()[:400]
    assert "make run" in head
    assert "make test" in head


def test_ci_calls_the_readmes_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_lists_every_decision_record_once():
    decisions = (ROOT / "README.md").read_text().split("## Design decisions", 1)[1]
    listed = re.findall(r"\(docs/adr/(\d{4}-[^)]+\.md)\)", decisions)
    on_disk = sorted(p.name for p in (ROOT / "docs" / "adr").glob("[0-9]*.md"))
    assert sorted(listed) == on_disk
    numbers = [name[:4] for name in on_disk]
    assert len(numbers) == len(set(numbers)), "two decision records share a number"
