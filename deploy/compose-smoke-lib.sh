# shellcheck shell=bash
# What the Compose smoke tests share (deploy/compose-smoke.sh, one machine;
# deploy/compose-cluster-smoke.sh, the Ray cluster): sourced, never run. The caller has
# `set -euo pipefail` and the repository root as its working directory.
#
#   smoke_setup                     python, compose_cmd, workdir (0700), env_file
#   smoke_write_env [LINE...]       env_file with fresh random secrets, then LINEs
#   smoke_resolve NAME FILE... [-- FINISH_OPTION...]
#                                   ${workdir}/NAME/project.yml: the project of FILEs as
#                                   Compose v1 and v2 both read it, resolved with env_file
#                                   and this environment, rewritten without GPUs
#   wait_healthy SERVICE...         polls the healthchecks of `compose` (an array the
#                                   caller sets) until all of SERVICEs are healthy
#   smoke_logs COMPOSE...           state and the last logs of a project, for a failure
#
# Settings (environment): CARRIL_COMPOSE (the Compose command; default `docker compose`
# if it works, else `docker-compose`), CARRIL_SMOKE_PYTHON (a python3 with PyYAML),
# CARRIL_SMOKE_IMAGES (space-separated SERVICE=IMAGE swaps, e.g. a stand-in database
# image), CARRIL_IMAGE_TAG (local), CARRIL_SMOKE_UP_TIMEOUT (600 s).
#
# The variables it sets are for its callers, and `compose` is theirs:
# shellcheck disable=SC2034,SC2154

smoke_setup() {
    python="${CARRIL_SMOKE_PYTHON:-python3}"
    if ! "${python}" -c "import yaml" 2>/dev/null; then
        echo "smoke: ${python} has no PyYAML (Debian/Ubuntu: python3-yaml), or set CARRIL_SMOKE_PYTHON" >&2
        exit 1
    fi
    workdir="$(mktemp -d)"
    # The env file and the resolved configurations hold the generated secrets.
    chmod 0700 "${workdir}"
    env_file="${workdir}/smoke.env"

    if [[ -n "${CARRIL_COMPOSE:-}" ]]; then
        read -ra compose_cmd <<<"${CARRIL_COMPOSE}"
    elif docker compose version >/dev/null 2>&1; then
        compose_cmd=(docker compose)
    elif command -v docker-compose >/dev/null; then
        compose_cmd=(docker-compose)
    else
        echo "smoke: neither \`docker compose\` nor \`docker-compose\` is installed" >&2
        exit 1
    fi

    finish_options=(--no-gpus)
    for swap in ${CARRIL_SMOKE_IMAGES:-}; do
        finish_options+=(--image "${swap}")
    done
    # docker-compose.yml lifts the gpu container's memlock limit; an engine that may not
    # (one in a container or VM without CAP_SYS_RESOURCE) refuses to start it. There the
    # smoke test keeps the engine's limit: simulated jobs pin no memory.
    if ! docker run --rm --ulimit memlock=-1:-1 --entrypoint true \
        "carril-gpu:${CARRIL_IMAGE_TAG:-local}" >/dev/null 2>&1; then
        echo "smoke: this engine cannot lift the memlock limit; the gpu container keeps its own"
        finish_options+=(--drop-ulimit memlock)
    fi
}

secret() {
    python3 -c 'import secrets; print(secrets.token_urlsafe(32))'
}

# Real random secrets: with CARRIL_ENV=production the services refuse placeholders.
smoke_write_env() {
    demo_password="$(secret)"
    admin_password="$(secret)"
    gpu_token="$(secret)"
    cat >"${env_file}" <<ENV
CARRIL_GPU_SERVICE_TOKEN=${gpu_token}
CARRIL_SECRET_KEY=$(secret)
CARRIL_METRICS_TOKEN=$(secret)
POSTGRES_PASSWORD=$(secret)
CARRIL_DEMO_PASSWORD=${demo_password}
CARRIL_GRAFANA_ADMIN_PASSWORD=$(secret)
CARRIL_WEB_BIND=127.0.0.1
CARRIL_IMAGE_TAG=${CARRIL_IMAGE_TAG:-local}
ENV
    if (($#)); then
        printf '%s\n' "$@" >>"${env_file}"
    fi
}

# Compose v1 reads neither `name` nor `!reset`: deploy/compose_config.py writes copies
# without them (a file's `!reset` keys also leave the copies of the files before it),
# Compose resolves those, and the resolved file loses what `!reset` removed and the
# NVIDIA device reservations. `up` and everything after it use that one file.
smoke_resolve() {
    local name="$1"
    shift
    local files=() options=()
    while (($#)) && [[ "$1" != -- ]]; do
        files+=("$1")
        shift
    done
    if (($#)); then
        shift
        options=("$@")
    fi
    local dir="${workdir}/${name}"
    mkdir -p "${dir}"
    local copies=() resets=() config_files=() file
    for file in "${files[@]}"; do
        "${python}" deploy/compose_config.py portable "${file}" "${dir}/${file}" \
            "${dir}/${file}.resets" --earlier "${copies[@]}"
        copies+=("${dir}/${file}")
        resets+=("${dir}/${file}.resets")
        config_files+=(-f "${dir}/${file}")
    done
    "${compose_cmd[@]}" --project-directory . --env-file "${env_file}" "${config_files[@]}" \
        config >"${dir}/resolved.yml"
    "${python}" deploy/compose_config.py finish "${dir}/resolved.yml" "${dir}/project.yml" \
        --resets "${resets[@]}" "${finish_options[@]}" "${options[@]}"
}

# Compose v1 has no `up --wait`: poll each container's healthcheck instead.
wait_healthy() {
    local started=${SECONDS}
    local deadline=$((SECONDS + ${CARRIL_SMOKE_UP_TIMEOUT:-600}))
    local service id status pending
    while true; do
        pending=()
        for service in "$@"; do
            id="$("${compose[@]}" ps -q "${service}" 2>/dev/null || true)"
            status="$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}no healthcheck{{end}}' "${id:-none}" 2>/dev/null || echo "not created")"
            [[ "${status}" == healthy ]] || pending+=("${service}: ${status}")
        done
        if ((${#pending[@]} == 0)); then
            echo "smoke: $* healthy after $((SECONDS - started)) s"
            return 0
        fi
        if ((SECONDS > deadline)); then
            echo "smoke: not healthy in time: ${pending[*]}" >&2
            return 1
        fi
        sleep 3
    done
}

smoke_logs() {
    "$@" ps || true
    "$@" logs --no-color --timestamps --tail=400 || true
}
