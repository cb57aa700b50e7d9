#!/usr/bin/env bash
# Brings the Compose project up on the simulated runtime (no GPU needed), runs
# deploy/smoke_test.py against it (upload, train, promote, infer), restarts the `gpu`
# container in the middle of the training and checks that the training resumed and
# succeeded, checks that one request id shows up in both services' logs, and tears
# everything down (volumes included) whatever happened.
#
#   bash deploy/compose-smoke.sh     # GitHub CI; `make compose-smoke` wraps it for machines
#                                    # without a registry (scripts/compose-smoke-local.sh)
#
# Uses the images carril-web:$CARRIL_IMAGE_TAG and carril-gpu:$CARRIL_IMAGE_TAG, built
# beforehand; it never builds. Works with Compose v2 (`docker compose`) and v1.29
# (`docker-compose`): the project's files go through deploy/compose_config.py, which
# removes what only v2 reads (`name`, `!reset`), and the resolved configuration loses the
# NVIDIA device reservation, so nothing here needs a GPU or the NVIDIA runtime.
#
# Settings (environment): CARRIL_WEB_PORT (18000, published on 127.0.0.1 only), those of
# deploy/compose-smoke-lib.sh (CARRIL_IMAGE_TAG, CARRIL_COMPOSE, CARRIL_SMOKE_IMAGES,
# CARRIL_SMOKE_PYTHON, CARRIL_SMOKE_UP_TIMEOUT), CARRIL_SMOKE_EPOCHS (12: the web app sees
# progress a few epochs late, and the restart must land mid-training, not while
# ultralytics finalises its checkpoints).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=deploy/compose-smoke-lib.sh
source deploy/compose-smoke-lib.sh

project="carril-smoke-${GITHUB_RUN_ID:-$$}"
port="${CARRIL_WEB_PORT:-18000}"
epochs="${CARRIL_SMOKE_EPOCHS:-12}"
smoke_setup
smoke_write_env "CARRIL_WEB_PORT=${port}"

# The project as Compose v1 and v2 both read it: -f docker-compose.yml -f
# docker-compose.simulated.yml, resolved, then rewritten without GPUs.
smoke_resolve single docker-compose.yml docker-compose.simulated.yml

compose=("${compose_cmd[@]}" --project-name "${project}" --project-directory .
    -f "${workdir}/single/project.yml")
services=(db gpu web reconciler)

cleanup() {
    local rc=$?
    if ((rc != 0)); then
        echo "smoke: failed (exit ${rc}); state and logs follow" >&2
        smoke_logs "${compose[@]}"
    fi
    "${compose[@]}" down --volumes --remove-orphans --timeout 30 || true
    rm -rf "${workdir}"
    exit "${rc}"
}
trap cleanup EXIT

echo "smoke: starting project ${project} on 127.0.0.1:${port} with ${compose_cmd[*]}"
"${compose[@]}" up --detach --no-build
wait_healthy "${services[@]}"

# Both images run as their own non-root user, the one that owns the shared storage.
for service in web gpu; do
    uid="$("${compose[@]}" exec -T "${service}" id -u | tr -d '\r')"
    if [[ "${uid}" != 10001 ]]; then
        echo "smoke: ${service} runs as uid ${uid}, not 10001" >&2
        exit 1
    fi
done
echo "smoke: web and gpu run as uid 10001"

echo "smoke: creating the administrator"
"${compose[@]}" exec -T \
    -e DJANGO_SUPERUSER_USERNAME=smoke-admin \
    -e DJANGO_SUPERUSER_EMAIL=smoke-admin@example.invalid \
    -e DJANGO_SUPERUSER_PASSWORD="${admin_password}" \
    web python manage.py createsuperuser --noinput

restart_gpu="$(printf '%q ' "${compose[@]}" restart --timeout 60 gpu)"
request_id="smoke-$(python3 -c 'import uuid; print(uuid.uuid4().hex)')"
CARRIL_DEMO_PASSWORD="${demo_password}" CARRIL_SMOKE_ADMIN_PASSWORD="${admin_password}" \
    python3 deploy/smoke_test.py --base-url "http://127.0.0.1:${port}" \
    --user demo --admin smoke-admin --request-id "${request_id}" \
    --epochs "${epochs}" --restart-during-training "${restart_gpu}"

# The restart landed while the training ran: the new GPU service found it in its journal
# and queued it again, and the worker went on from the last checkpoint.
gpu_logs="$("${compose[@]}" logs --no-color gpu)"
if ! grep -q "start-up recovery: 1 resumed" <<<"${gpu_logs}"; then
    echo "smoke: the restarted GPU service did not resume the training" >&2
    exit 1
fi
if ! "${compose[@]}" exec -T gpu sh -c 'grep -h "resumes at epoch" /srv/carril/jobs/*/job.log'; then
    echo "smoke: the resumed training did not start from its checkpoint" >&2
    exit 1
fi
echo "smoke: the training survived the restart of the gpu container"

# One id finds a job's whole story: the browser's (here: the smoke test's) request id must
# appear in the web app's logs and in the GPU service's.
# The logs are read whole first: `logs | grep -q` under pipefail fails when grep stops at
# the first match and `logs` then dies of SIGPIPE (a found id reported as missing).
for service in web gpu; do
    service_logs="$("${compose[@]}" logs --no-color "${service}")"
    if ! grep -q -- "${request_id}" <<<"${service_logs}"; then
        echo "smoke: request id ${request_id} not found in the ${service} logs" >&2
        exit 1
    fi
    echo "smoke: request id found in the ${service} logs"
done

# Healthy still, after all that (the healthchecks themselves are what is checked here).
wait_healthy "${services[@]}"
echo "smoke: passed"
