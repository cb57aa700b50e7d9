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

# The overrides use Compose's `!reset` tag, which a plain YAML loader refuses; read them with
# one that knows the tag, then validate what Compose would read (a reset key is absent).
compose_override_as_json() {
    local file="$1" out="$2"
    "${VENV}/bin/python" - "${file}" "$out" <<'PY'
import json
import sys

import yaml


class ComposeLoader(yaml.SafeLoader):
    pass


class Reset:
    pass


def _tagged(loader, node):
    # `!override` replaces the base value; for the schema the value is what counts.
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


def without_resets(node):
    if isinstance(node, dict):
        return {k: without_resets(v) for k, v in node.items() if not isinstance(v, Reset)}
    if isinstance(node, list):
        return [without_resets(v) for v in node]
    return node


ComposeLoader.add_constructor("!reset", lambda loader, node: Reset())
ComposeLoader.add_constructor("!override", _tagged)
with open(sys.argv[1]) as fh:
    data = yaml.load(fh, Loader=ComposeLoader)  # noqa: S506 - SafeLoader subclass
with open(sys.argv[2], "w") as fh:
    json.dump(without_resets(data), fh)
PY
}

check_compose_override() {
    local file="$1" tmp
    tmp="$(mktemp -d)"
    compose_override_as_json "${file}" "${tmp}/${file%.yml}.json" &&
        "${VENV}/bin/check-jsonschema" --builtin-schema vendor.compose-spec \
            "${tmp}/${file%.yml}.json"
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
            -f docker-compose.simulated.yml config -q &&
        docker compose --env-file "${env_file}" -f docker-compose.yml \
            -f docker-compose.cluster.yml config -q
    local rc=$?
    rm -f "${env_file}"
    return "${rc}"
}

# Compose v1.29 (Debian's docker-compose) reads the projects only as the smoke tests
# rewrite them (deploy/compose_config.py); check that it does, for one machine and for the
# cluster (deploy/compose-smoke.sh, deploy/compose-cluster-smoke.sh).
check_compose_v1_config() {
    if ! command -v docker-compose >/dev/null; then
        echo "skipped: docker-compose (v1) is not installed"
        return 0
    fi
    local tmp rc=0
    tmp="$(mktemp -d)"
    sed 's/=changethis$/=static-check-only/' .env.example >"${tmp}/env"
    compose_v1_config "${tmp}" docker-compose.yml docker-compose.simulated.yml || rc=1
    compose_v1_config "${tmp}" docker-compose.yml docker-compose.simulated.yml \
        docker-compose.cluster.yml || rc=1
    rm -rf "${tmp}"
    return "${rc}"
}

compose_v1_config() {
    local tmp="$1" file
    shift
    local copies=() config_files=()
    rm -f "${tmp}"/*.yml
    for file in "$@"; do
        "${VENV}/bin/python" deploy/compose_config.py portable "${file}" "${tmp}/${file}" \
            "${tmp}/${file}.resets" --earlier "${copies[@]}" || return 1
        copies+=("${tmp}/${file}")
        config_files+=(-f "${tmp}/${file}")
    done
    echo "${*}: read by docker-compose $(docker-compose version --short)"
    docker-compose --project-directory . --env-file "${tmp}/env" "${config_files[@]}" config -q
}

run "workflows match the GitHub workflow schema" \
    "${VENV}/bin/check-jsonschema" --builtin-schema vendor.github-workflows \
    "${workflows[@]}" "${example_workflows[@]}"
run "zizmor finds nothing in the workflows" \
    "${VENV}/bin/zizmor" --offline --no-progress --persona=pedantic .github/workflows \
    "${example_workflows[@]}"
run "docker-compose.yml matches the Compose specification" \
    "${VENV}/bin/check-jsonschema" --builtin-schema vendor.compose-spec docker-compose.yml
run "docker-compose.simulated.yml matches the Compose specification" \
    check_compose_override docker-compose.simulated.yml
run "docker-compose.cluster.yml matches the Compose specification" \
    check_compose_override docker-compose.cluster.yml
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
