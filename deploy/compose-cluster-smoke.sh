#!/usr/bin/env bash
# Runs docker-compose.cluster.yml on this one machine, everything on 127.0.0.1: the head
# project (PostgreSQL, web, reconciler, the GPU service in Ray mode, the Ray head) and one
# node project per GPU host (gpu-a, gpu-b: `ray-node`, two simulated GPUs each), each
# started as docs/scale-out.md tells a GPU host to. Then deploy/smoke_test.py --cluster
# checks, through the ports on 127.0.0.1: every Ray node on 127.0.0.1, the four GPUs with
# their hosts in the GPU service and in the web app, a 2-GPU job placed whole on one host,
# a training through the web app (upload, one epoch on a GPU host, its log read back by
# the web app from the shared storage), and a job whose host is stopped under it (`stop
# ray-node` in that host's project) running again on the other host as attempt 2.
# Everything is torn down, volumes included, whatever happened.
#
#   bash deploy/compose-cluster-smoke.sh     # `make compose-cluster-smoke` wraps it for
#                                            # machines without a registry
#
# Uses the images carril-web:$CARRIL_IMAGE_TAG and carril-gpu:$CARRIL_IMAGE_TAG, built
# beforehand. The project goes through deploy/compose-smoke-lib.sh as in
# deploy/compose-smoke.sh (Compose v1 and v2, no GPUs), and the rewrite also makes the
# NFS volume of the shared storage a local volume, which the node projects mount as the
# head project's: one /srv/carril for all, as NFS gives the hosts of a real cluster.
# The services on the host's network get ports of their own (below), never Ray's 6379.
#
# Settings (environment): CARRIL_WEB_PORT (18000, published on 127.0.0.1),
# CARRIL_SMOKE_GPU_PORT (18001: the GPU service, on the host's network),
# CARRIL_SMOKE_RAY_PORT (26379: the head's GCS), CARRIL_SMOKE_RAY_NODE_PORTS (26400: the
# head's block of 100 ports, then one block per host), CARRIL_SMOKE_TRAIN_EPOCHS (1: the
# epochs of the training; 0 leaves it out), and those of deploy/compose-smoke-lib.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=deploy/compose-smoke-lib.sh
source deploy/compose-smoke-lib.sh

project="carril-cluster-smoke-${GITHUB_RUN_ID:-$$}"
web_port="${CARRIL_WEB_PORT:-18000}"
gpu_port="${CARRIL_SMOKE_GPU_PORT:-18001}"
ray_port="${CARRIL_SMOKE_RAY_PORT:-26379}"
node_ports="${CARRIL_SMOKE_RAY_NODE_PORTS:-26400}"
hosts=(gpu-a gpu-b)
files=(docker-compose.yml docker-compose.simulated.yml docker-compose.cluster.yml)
started=${SECONDS}

# On the host's network a taken port would be a stranger's service: refuse to start.
if ! python3 - "${web_port}" "${gpu_port}" "${ray_port}" "${node_ports}" "${#hosts[@]}" <<'PY'; then
import socket
import sys

web, gpu, ray, first, hosts = map(int, sys.argv[1:])
taken = []
for port in [web, gpu, ray, *range(first, first + 100 * (hosts + 1))]:
    with socket.socket() as probe:
        # As the servers do: a port whose last connections wait out TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            taken.append(port)
if taken:
    sys.exit(f"smoke: ports taken on 127.0.0.1: {taken}")
PY
    echo "smoke: set CARRIL_WEB_PORT, CARRIL_SMOKE_GPU_PORT, CARRIL_SMOKE_RAY_PORT or CARRIL_SMOKE_RAY_NODE_PORTS" >&2
    exit 1
fi

smoke_setup
# One env file for every project, as on a real cluster (the same .env on every host);
# what differs per host (its name, its ports) comes from the environment of `config`.
smoke_write_env \
    "CARRIL_WEB_PORT=${web_port}" \
    "CARRIL_GPU_PORT=${gpu_port}" \
    "CARRIL_RAY_PORT=${ray_port}" \
    "CARRIL_RAY_HEAD_ADDRESS=127.0.0.1:${ray_port}" \
    "CARRIL_RAY_NODE_IP=127.0.0.1" \
    "CARRIL_GPU_RUNTIME=simulated" \
    "CARRIL_SIMULATED_GPUS=2x24GiB" \
    "CARRIL_NODE_CPUS=2" \
    "CARRIL_GPU_SHM_SIZE=1gb"

CARRIL_NODE_NAME=head CARRIL_RAY_NODE_PORTS="${node_ports}" \
    smoke_resolve head "${files[@]}" -- --local-volume carril-storage
block=1
for host in "${hosts[@]}"; do
    CARRIL_NODE_NAME="${host}" CARRIL_RAY_NODE_PORTS="$((node_ports + 100 * block))" \
        smoke_resolve "${host}" "${files[@]}" -- \
        --local-volume "carril-storage=${project}_carril-storage"
    block=$((block + 1))
done

compose=("${compose_cmd[@]}" --project-name "${project}" --project-directory .
    -f "${workdir}/head/project.yml")
# A GPU host's project, as that host would run it.
node_compose() {
    local host="$1"
    shift
    "${compose_cmd[@]}" --project-name "${project}-${host}" --project-directory . \
        -f "${workdir}/${host}/project.yml" --profile node "$@"
}
# The same for smoke_test.py, which replaces {host}.
stop_node="$(printf '%q ' "${compose_cmd[@]}" --project-name "${project}-{host}" \
    --project-directory . -f "${workdir}/{host}/project.yml" --profile node stop ray-node)"
services=(ray-head db gpu web reconciler)

cleanup() {
    local rc=$?
    local host
    if ((rc != 0)); then
        echo "smoke: failed (exit ${rc}); state and logs follow" >&2
        smoke_logs "${compose[@]}"
        for host in "${hosts[@]}"; do
            smoke_logs node_compose "${host}"
        done
    fi
    for host in "${hosts[@]}"; do
        node_compose "${host}" down --volumes --remove-orphans --timeout 10 || true
    done
    "${compose[@]}" down --volumes --remove-orphans --timeout 30 || true
    rm -rf "${workdir}"
    echo "smoke: $((SECONDS - started)) s in all"
    exit "${rc}"
}
trap cleanup EXIT

echo "smoke: starting the head project ${project} (web 127.0.0.1:${web_port}, GPU service" \
    "127.0.0.1:${gpu_port}, Ray 127.0.0.1:${ray_port}) with ${compose_cmd[*]}"
"${compose[@]}" up --detach --no-build ray-head
wait_healthy ray-head
# The GPU hosts join while the web app migrates.
for host in "${hosts[@]}"; do
    echo "smoke: starting ${host}'s Ray node (project ${project}-${host})"
    node_compose "${host}" up --detach --no-build ray-node
done
"${compose[@]}" up --detach --no-build
wait_healthy "${services[@]}"

for host in "${hosts[@]}"; do
    uid="$(node_compose "${host}" exec -T ray-node id -u | tr -d '\r')"
    if [[ "${uid}" != 10001 ]]; then
        echo "smoke: ${host}'s Ray node runs as uid ${uid}, not 10001" >&2
        exit 1
    fi
done
echo "smoke: the Ray nodes run as uid 10001"

ray_nodes="$(printf '%q ' "${compose[@]}" exec -T gpu \
    python -m gpu_service.cluster nodes "127.0.0.1:${ray_port}")"
CARRIL_DEMO_PASSWORD="${demo_password}" CARRIL_GPU_SERVICE_TOKEN="${gpu_token}" \
    python3 deploy/smoke_test.py --cluster \
    --base-url "http://127.0.0.1:${web_port}" --gpu-url "http://127.0.0.1:${gpu_port}" \
    --user demo --request-id "cluster-smoke-$$" --timeout 180 \
    --hosts "$(IFS=,; echo "${hosts[*]}")" --gpus-per-host 2 --node-address 127.0.0.1 \
    --ray-nodes "${ray_nodes}" \
    --stop-node "${stop_node}" \
    --train-epochs "${CARRIL_SMOKE_TRAIN_EPOCHS:-1}"

# The head's services are healthy still, with one GPU host gone.
wait_healthy "${services[@]}"
echo "smoke: cluster passed in $((SECONDS - started)) s"
