#!/usr/bin/env bash
# Brings the Compose project up on the simulated runtime (no GPU needed), runs
# deploy/smoke_test.py against it, checks that one request id shows up in both services'
# logs, and tears everything down (volumes included) whatever happened.
#
#   bash deploy/compose-smoke.sh          # CI runs this; works on a laptop with Docker too
#
# Builds the images unless carril-web:$CARRIL_IMAGE_TAG and carril-gpu:$CARRIL_IMAGE_TAG
# already exist. Needs Docker Compose 2.24.4 or newer (`!reset` in the override).
set -euo pipefail
cd "$(dirname "$0")/.."

project="carril-smoke-${GITHUB_RUN_ID:-$$}"
port="${CARRIL_WEB_PORT:-18000}"
workdir="$(mktemp -d)"
env_file="${workdir}/smoke.env"

secret() {
    python3 -c 'import secrets; print(secrets.token_urlsafe(32))'
}

# Real random secrets: with CARRIL_ENV=production the services refuse placeholders.
demo_password="$(secret)"
admin_password="$(secret)"
cat >"${env_file}" <<ENV
CARRIL_GPU_SERVICE_TOKEN=$(secret)
CARRIL_SECRET_KEY=$(secret)
CARRIL_METRICS_TOKEN=$(secret)
POSTGRES_PASSWORD=$(secret)
CARRIL_DEMO_PASSWORD=${demo_password}
CARRIL_GRAFANA_ADMIN_PASSWORD=$(secret)
CARRIL_WEB_BIND=127.0.0.1
CARRIL_WEB_PORT=${port}
CARRIL_IMAGE_TAG=${CARRIL_IMAGE_TAG:-local}
ENV

compose=(docker compose --project-name "${project}" --env-file "${env_file}"
    -f docker-compose.yml -f docker-compose.simulated.yml)

cleanup() {
    local rc=$?
    if ((rc != 0)); then
        echo "smoke: failed (exit ${rc}); state and logs follow" >&2
        "${compose[@]}" ps --all || true
        "${compose[@]}" logs --no-color --timestamps --tail=400 || true
    fi
    "${compose[@]}" down --volumes --remove-orphans --timeout 30 || true
    rm -rf "${workdir}"
    exit "${rc}"
}
trap cleanup EXIT

echo "smoke: starting project ${project} on port ${port}"
"${compose[@]}" up --detach --wait --wait-timeout 600

echo "smoke: creating the administrator"
"${compose[@]}" exec -T \
    -e DJANGO_SUPERUSER_USERNAME=smoke-admin \
    -e DJANGO_SUPERUSER_EMAIL=smoke-admin@example.invalid \
    -e DJANGO_SUPERUSER_PASSWORD="${admin_password}" \
    web python manage.py createsuperuser --noinput

request_id="smoke-$(python3 -c 'import uuid; print(uuid.uuid4().hex)')"
CARRIL_DEMO_PASSWORD="${demo_password}" CARRIL_SMOKE_ADMIN_PASSWORD="${admin_password}" \
    python3 deploy/smoke_test.py --base-url "http://127.0.0.1:${port}" \
    --user demo --admin smoke-admin --request-id "${request_id}"

# One id finds a job's whole story: the browser's (here: the smoke test's) request id must
# appear in the web app's logs and in the GPU service's.
for service in web gpu; do
    if ! "${compose[@]}" logs --no-color "${service}" | grep -q -- "${request_id}"; then
        echo "smoke: request id ${request_id} not found in the ${service} logs" >&2
        exit 1
    fi
    echo "smoke: request id found in the ${service} logs"
done

echo "smoke: passed"
