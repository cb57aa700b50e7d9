"""The GitHub workflow: least privilege, actions pinned by commit, and the jobs the issue
asks for (lint, tests on PostgreSQL, both images, the Compose smoke test); `.ci/run`: the
README's `make test` on SQLite, then the tests that run the web as processes on
PostgreSQL; and the smoke scripts that `.ci/run` runs (one machine, the Ray cluster)."""

from __future__ import annotations

import re

from tests.deploy.deploy_files import ROOT, load_yaml

WORKFLOW = ".github/workflows/ci.yml"


def workflow() -> dict:
    return load_yaml(name=WORKFLOW)


def steps(job: str) -> list[dict]:
    return workflow()["jobs"][job]["steps"]


def run_text(job: str) -> str:
    return "\n".join(step.get("run", "") for step in steps(job))


def test_the_workflow_only_reads_the_repository():
    assert workflow()["permissions"] == {"contents": "read"}
    for name, job in workflow()["jobs"].items():
        assert job.get("permissions") in (None, {"contents": "read"}), name


def test_every_action_is_pinned_to_a_commit_with_its_version_in_a_comment():
    lines = (ROOT / WORKFLOW).read_text().splitlines()
    uses = [line for line in lines if re.match(r"\s*-?\s*uses:", line)]
    assert uses
    for line in uses:
        assert re.search(r"uses: [\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), line


def test_checkouts_do_not_keep_the_token_on_disk():
    for name, job in workflow()["jobs"].items():
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, name


def test_every_job_has_a_timeout():
    for name, job in workflow()["jobs"].items():
        assert 0 < job["timeout-minutes"] <= 90, name


def test_the_lint_job_runs_ruff_and_the_static_checks():
    text = run_text("lint")
    assert "ruff check ." in text
    assert "ruff format --check ." in text
    assert "bash scripts/static-checks.sh" in text


def test_the_tests_run_on_the_simulated_runtime_against_a_postgresql_service():
    job = workflow()["jobs"]["test"]
    postgres = job["services"]["postgres"]
    assert postgres["image"].startswith("postgres:")
    assert "pg_isready" in postgres["options"]
    assert job["env"]["DATABASE_URL"].startswith("postgres://")
    assert job["env"]["DATABASE_URL"].split("@")[1].startswith("postgres:5432/")
    assert job["env"]["CARRIL_GPU_RUNTIME"] == "simulated"
    assert "make test" in run_text("test")
    assert "chromium" in run_text("test")


def test_the_compose_job_builds_both_images_then_runs_the_smoke_test():
    text = run_text("compose")
    assert "--file Dockerfile.web" in text
    assert "--file Dockerfile.gpu" in text
    assert text.index("Dockerfile.gpu") < text.index("bash deploy/compose-smoke.sh")


def test_the_smoke_script_uses_the_simulated_override_and_always_tears_down():
    script = (ROOT / "deploy" / "compose-smoke.sh").read_text()
    # Both files, made readable by Compose v1 too, resolved, then rewritten without GPUs.
    assert "smoke_resolve single docker-compose.yml docker-compose.simulated.yml" in script
    lib = (ROOT / "deploy" / "compose-smoke-lib.sh").read_text()
    assert "compose_config.py portable" in lib
    assert '--earlier "${copies[@]}"' in lib
    assert "compose_config.py finish" in lib
    assert "finish_options=(--no-gpus)" in lib
    assert "trap cleanup EXIT" in script
    cleanup = script.split("cleanup() {", 1)[1].split("\n}", 1)[0]
    assert "down --volumes" in cleanup
    assert "python3 deploy/smoke_test.py" in script


def test_the_cluster_smoke_script_runs_the_head_and_each_gpu_host_as_projects_of_their_own():
    script = (ROOT / "deploy" / "compose-cluster-smoke.sh").read_text()
    assert "source deploy/compose-smoke-lib.sh" in script
    assert (
        "files=(docker-compose.yml docker-compose.simulated.yml docker-compose.cluster.yml)"
        in script
    )
    # One shared storage: the head's local volume, the nodes' as that existing volume.
    assert "--local-volume carril-storage" in script
    assert '"carril-storage=${project}_carril-storage"' in script
    # On loopback, off Ray's default port (a Redis has it on these machines), a port
    # block per node.
    assert '"CARRIL_RAY_NODE_IP=127.0.0.1"' in script
    assert 'ray_port="${CARRIL_SMOKE_RAY_PORT:-26379}"' in script
    assert 'CARRIL_RAY_NODE_PORTS="$((node_ports + 100 * block))"' in script
    # The documented way a host leaves, under a running job; then all of it goes.
    assert "--profile node stop ray-node" in script
    assert "--node-address 127.0.0.1" in script
    assert "trap cleanup EXIT" in script
    cleanup = script.split("cleanup() {", 1)[1].split("\n}", 1)[0]
    assert 'node_compose "${host}" down --volumes' in cleanup
    assert '"${compose[@]}" down --volumes' in cleanup
    assert cleanup.index("node_compose") < cleanup.index('"${compose[@]}" down')


def test_the_smoke_script_restarts_the_gpu_container_during_the_training():
    script = (ROOT / "deploy" / "compose-smoke.sh").read_text()
    assert "restart --timeout 60 gpu" in script
    assert '--restart-during-training "${restart_gpu}"' in script
    assert "start-up recovery: 1 resumed" in script


def test_the_smoke_script_needs_nothing_that_only_compose_v2_has():
    script = (ROOT / "deploy" / "compose-smoke.sh").read_text()
    # v1 has no `up --wait`: the script polls the healthchecks itself.
    commands = [line for line in script.splitlines() if not line.lstrip().startswith("#")]
    assert not any("--wait" in line for line in commands)
    assert any("up --detach --no-build" in line for line in commands)
    assert "docker-compose" in script


def test_the_ci_script_runs_the_compose_smoke_tests_after_the_tests():
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [line for line in ci.splitlines() if line and not line.startswith("#")]
    assert commands.index("make test") < commands.index("make compose-smoke")
    # Right after it, with the images it built in the cache.
    assert commands[commands.index("make compose-smoke") + 1] == "make compose-cluster-smoke"
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\ncompose-smoke:", 1)[1].split("\n\n", 1)[0]
    assert "bash scripts/compose-smoke-local.sh\n" in target + "\n"
    target = makefile.split("\ncompose-cluster-smoke:", 1)[1].split("\n\n", 1)[0]
    assert "bash scripts/compose-smoke-local.sh cluster" in target


def test_the_local_smoke_test_builds_the_dockerfiles_with_only_build_arguments_added():
    script = (ROOT / "scripts" / "compose-smoke-local.sh").read_text()
    # The images are built from the repository's Dockerfiles, less the `# syntax=` line
    # (it would fetch the frontend from Docker Hub); everything else is build arguments.
    assert """sed '1{/^# syntax=/d}' "Dockerfile.${name}\"""" in script
    assert '--build-arg PYTHON_IMAGE="${python_image}"' in script
    assert "--build-arg PIP_NO_INDEX=1" in script
    assert "127.0.0.1:${wheel_port}" in script
    assert "cluster) smoke_script=deploy/compose-cluster-smoke.sh ;;" in script
    assert "single) smoke_script=deploy/compose-smoke.sh ;;" in script
    assert 'bash "${smoke_script}"' in script


def ci_commands() -> list[str]:
    ci = (ROOT / ".ci" / "run").read_text()
    return [line for line in ci.splitlines() if line and not line.lstrip().startswith("#")]


def postgres_tests() -> list[str]:
    ci = (ROOT / ".ci" / "run").read_text()
    listed = ci.split("\npostgres_tests=(\n", 1)[1].split("\n)\n", 1)[0]
    lines = (line.strip() for line in listed.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_the_ci_script_runs_the_readmes_make_test_on_sqlite_then_the_stack_tests_on_postgresql():
    commands = ci_commands()
    # The README's command as a fresh clone runs it: no DATABASE_URL, so SQLite.
    assert commands.index("unset DATABASE_URL") < commands.index("make test")
    assert not any(line.startswith("export DATABASE_URL") for line in commands)
    again = commands.index(
        'DATABASE_URL="postgres://postgres@127.0.0.1:5432/${db}" '
        'make test PYTEST_ARGS="${postgres_tests[*]}"'
    )
    assert commands.index("make test") < again < commands.index("make compose-smoke")


def test_every_test_module_that_runs_the_web_as_processes_is_run_again_on_postgresql():
    listed = postgres_tests()
    for entry in listed:
        path, _, name = entry.partition("::")
        assert (ROOT / path).exists(), f".ci/run lists {path}, which does not exist"
        assert not name or f"def {name}(" in (ROOT / path).read_text(), entry
    files = [entry.partition("::")[0] for entry in listed]
    # The stack harness, or a harness handed DATABASE_URL (the benchmarks').
    harness = re.compile(r"tests\.support\.(stack|database)\b|environ\.get\(\"DATABASE_URL\"")
    users = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("*.py")
        if (path.name.startswith("test_") or path.name == "conftest.py")
        and harness.search(path.read_text())
    }
    assert "tests/reliability/test_soak.py" in users  # the pattern still finds them
    missed = sorted(
        user
        for user in users
        if not any(user == p or user.startswith(p.rstrip("/") + "/") for p in files)
    )
    assert not missed, f"add these to postgres_tests in .ci/run: {missed}"
