#!/usr/bin/env bash
# Static checks of the deployment files, for where no Docker engine runs (this machine, CI's
# `.ci/run`). Every check runs even after one fails; the exit status is non-zero if any did.
#
#   bash scripts/static-checks.sh
#
# Tools: check-jsonschema, zizmor and hadolint from the virtualenv (requirements/dev.txt);
# From PATH: the shellcheck and promtool commands (Debian packages shellcheck, prometheus).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

VENV="${VENV:-.venv}"
failed=()

run() {
    local name="$1"
    shift
    echo "--- ${name}"
    if "$@"; then
        echo "ok: ${name}"
    else
        echo "FAILED: ${name}" >&2
        failed+=("${name}")
    fi
}

# Files of a kind, tracked or new (but not ignored), so a fresh script is checked too.
files() {
    git ls-files --cached --others --exclude-standard -- "$@" | sort -u | while read -r f; do
        [[ -f "$f" ]] && echo "$f"
    done
}

mapfile -t workflows < <(files '.github/workflows/*.yml' '.github/workflows/*.yaml')
# Example workflows users copy (examples/ci-training.yml) are held to the same checks.
mapfile -t example_workflows < <(files 'examples/*.yml')
mapfile -t shell_scripts < <(files '*.sh' '.ci/run')
mapfile -t dockerfiles < <(files 'Dockerfile*' '*.Dockerfile')

# The override uses Compose's `!reset` tag, which a plain YAML loader refuses; read it with
# one that knows the tag, then validate what Compose would read.
compose_override_as_json() {
    local out="$1"
    "${VENV}/bin/python" - docker-compose.simulated.yml "$out" <<'PY'
import json
import sys

import yaml


class ComposeLoader(yaml.SafeLoader):
    pass


def _tagged(loader, node):
    # `!reset` / `!override` replace the base value; for the schema the value is what counts.
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


ComposeLoader.add_constructor("!reset", _tagged)
ComposeLoader.add_constructor("!override", _tagged)
with open(sys.argv[1]) as fh:
    data = yaml.load(fh, Loader=ComposeLoader)  # noqa: S506 - SafeLoader subclass
with open(sys.argv[2], "w") as fh:
    json.dump(data, fh)
PY
}

check_compose_override() {
    local tmp
    tmp="$(mktemp -d)"
    compose_override_as_json "${tmp}/docker-compose.simulated.json" &&
        "${VENV}/bin/check-jsonschema" --builtin-schema vendor.compose-spec \
            "${tmp}/docker-compose.simulated.json"
    local rc=$?
    rm -rf "${tmp}"
    return "${rc}"
}

# `docker compose config` resolves merges and interpolation, but needs the Compose plugin
# (absent here); the schema checks above still run without it.
check_compose_config() {
    if ! docker compose version >/dev/null 2>&1; then
        echo "skipped: the docker compose plugin is not installed"
        return 0
    fi
    local env_file
    env_file="$(mktemp)"
    sed 's/=changethis$/=static-check-only/' .env.example >"${env_file}"
    docker compose --env-file "${env_file}" -f docker-compose.yml config -q &&
        docker compose --env-file "${env_file}" -f docker-compose.yml \
            -f docker-compose.simulated.yml config -q
    local rc=$?
    rm -f "${env_file}"
    return "${rc}"
}

# Compose v1.29 (Debian's docker-compose) reads the project only as deploy/compose-smoke.sh
# rewrites it (deploy/compose_config.py); check that it does.
check_compose_v1_config() {
    if ! command -v docker-compose >/dev/null; then
        echo "skipped: docker-compose (v1) is not installed"
        return 0
    fi
    local tmp file
    tmp="$(mktemp -d)"
    sed 's/=changethis$/=static-check-only/' .env.example >"${tmp}/env"
    for file in docker-compose.yml docker-compose.simulated.yml; do
        "${VENV}/bin/python" deploy/compose_config.py portable "${file}" "${tmp}/${file}" \
            "${tmp}/${file}.resets" || break
    done
    docker-compose --project-directory . --env-file "${tmp}/env" \
        -f "${tmp}/docker-compose.yml" -f "${tmp}/docker-compose.simulated.yml" config -q
    local rc=$?
    rm -rf "${tmp}"
    return "${rc}"
}

run "workflows match the GitHub workflow schema" \
    "${VENV}/bin/check-jsonschema" --builtin-schema vendor.github-workflows \
    "${workflows[@]}" "${example_workflows[@]}"
run "zizmor finds nothing in the workflows" \
    "${VENV}/bin/zizmor" --offline --no-progress --persona=pedantic .github/workflows \
    "${example_workflows[@]}"
run "docker-compose.yml matches the Compose specification" \
    "${VENV}/bin/check-jsonschema" --builtin-schema vendor.compose-spec docker-compose.yml
run "docker-compose.simulated.yml matches the Compose specification" check_compose_override
run "docker compose config accepts the project" check_compose_config
run "docker-compose (v1) config accepts the project as the smoke test rewrites it" \
    check_compose_v1_config
run "shellcheck finds nothing in the shell scripts" shellcheck "${shell_scripts[@]}"
run "hadolint finds nothing in the Dockerfiles" "${VENV}/bin/hadolint" "${dockerfiles[@]}"
# --syntax-only: the scrape token file is a Compose secret, there only at run time.
run "the Prometheus config is valid" \
    promtool check config --syntax-only deploy/prometheus/prometheus.yml
run "the alert rules are valid" promtool check rules deploy/prometheus/alerts.yml
run "the alert rules fire when they should (promtool unit tests)" \
    promtool test rules deploy/prometheus/alerts.test.yml

if ((${#failed[@]})); then
    echo >&2
    echo "static checks failed: ${#failed[@]}" >&2
    printf '  - %s\n' "${failed[@]}" >&2
    exit 1
fi
echo
echo "static checks: all passed"
