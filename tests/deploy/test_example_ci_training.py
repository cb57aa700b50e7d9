"""examples/ci-training.yml: a valid, zizmor-clean workflow that retrains and gates."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ci-training.yml"
BIN = Path(sys.executable).parent


def test_the_example_workflow_gates_the_promotion_and_keeps_the_token_in_a_secret():
    workflow = yaml.safe_load(EXAMPLE.read_text())
    job = workflow["jobs"]["retrain"]
    assert job["env"]["CARRIL_TOKEN"] == "${{ secrets.CARRIL_TOKEN }}"
    script = "\n".join(step.get("run", "") for step in job["steps"])
    assert "carril ci-train" in script
    assert "--promote" in script
    assert "--min-improvement" in script
    assert "--gate-metric" in script
    assert "datasets upload" in script


def test_the_example_workflow_passes_the_static_workflow_checks():
    schema = subprocess.run(
        [BIN / "check-jsonschema", "--builtin-schema", "vendor.github-workflows", EXAMPLE],
        capture_output=True,
        text=True,
        check=False,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr
    zizmor = subprocess.run(
        [BIN / "zizmor", "--offline", "--no-progress", "--persona=pedantic", EXAMPLE],
        capture_output=True,
        text=True,
        check=False,
    )
    assert zizmor.returncode == 0, zizmor.stdout + zizmor.stderr
    assert "examples/*.yml" in (ROOT / "scripts" / "static-checks.sh").read_text()
