#!/usr/bin/env bash
# `make compose-smoke`: builds both images and runs the Compose smoke test
# (deploy/compose-smoke.sh) on a Debian bookworm machine that reaches Debian's packages and
# a Python package index but no container registry (this project's CI machines).
# `make compose-cluster-smoke` runs the cluster's (deploy/compose-cluster-smoke.sh) instead.
#
#   make compose-smoke                     # or: bash scripts/compose-smoke-local.sh
#   make compose-cluster-smoke             # or: bash scripts/compose-smoke-local.sh cluster
#
# 1. Installs docker.io, docker-compose and debootstrap from Debian if missing.
# 2. Starts dockerd if none answers, and stops it at the end if it started it.
# 3. Builds the stand-in base images when absent: a `debootstrap --variant=minbase
#    bookworm` root imported with `docker import`, and on it stand-ins for
#    python:3.11-slim-bookworm and postgres (deploy/standin/).
# 4. Builds Dockerfile.web and Dockerfile.gpu on the stand-in Python base. pip in their
#    build stage gets its packages from a wheel directory that the host's own pip fills
#    (with the host's settings: `pip config list`), served on 127.0.0.1 for the build only.
# 5. Checks the images (web without torch, GPU with the CUDA build of torch, no build
#    settings left in either) and runs deploy/compose-smoke.sh (or, with `cluster`,
#    deploy/compose-cluster-smoke.sh) against them.
#
# What it keeps between runs, so that a second run only rebuilds what changed: the base
# images and build cache in Docker's data root, the wheels in $CARRIL_SMOKE_CACHE.
# Settings (environment): CARRIL_SMOKE_CACHE (/var/cache/carril-compose-smoke),
# CARRIL_SMOKE_WHEEL_PORT (18766; part of the build's cache key, so keep it fixed),
# CARRIL_SMOKE_DEBIAN_MIRROR (the first `URIs:`/`deb` line apt uses), CARRIL_IMAGE_TAG
# (local), CARRIL_SMOKE_BUILD_ONLY=1 (stop after building and checking the images).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-single}" in
single) smoke_script=deploy/compose-smoke.sh ;;
cluster) smoke_script=deploy/compose-cluster-smoke.sh ;;
*)
    echo "usage: bash scripts/compose-smoke-local.sh [single | cluster]" >&2
    exit 2
    ;;
esac
cache="${CARRIL_SMOKE_CACHE:-/var/cache/carril-compose-smoke}"
wheel_port="${CARRIL_SMOKE_WHEEL_PORT:-18766}"
tag="${CARRIL_IMAGE_TAG:-local}"
base_image=carril-standin/debian:bookworm-minbase
python_image=carril-standin/python:3.11-bookworm
postgres_image=carril-standin/postgres:15-bookworm
host_python="${VENV:-.venv}/bin/python"

workdir="$(mktemp -d)"
started_dockerd=""
wheel_server=""
step_started=${SECONDS}

step() {
    echo "compose-smoke: [$((SECONDS - step_started)) s] $*"
}

cleanup() {
    local rc=$?
    if [[ -n "${wheel_server}" ]]; then
        kill "${wheel_server}" 2>/dev/null || true
        wait "${wheel_server}" 2>/dev/null || true
    fi
    if [[ -n "${started_dockerd}" ]]; then
        step "stopping the dockerd this script started (pid ${started_dockerd})"
        kill "${started_dockerd}" 2>/dev/null || true
        # dockerd stops its containers first; give it the time to.
        for _ in $(seq 60); do
            kill -0 "${started_dockerd}" 2>/dev/null || break
            sleep 1
        done
    fi
    rm -rf "${workdir}"
    exit "${rc}"
}
trap cleanup EXIT

# --- 1. packages ---------------------------------------------------------------------------
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 ||
    missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if ((${#missing[@]})); then
    step "installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# BuildKit, for the Dockerfiles' `COPY --chmod`: through buildx where it is installed,
# else Debian's docker 20.10 client, which carries it (a newer client without buildx that
# may come first on PATH refuses BuildKit).
if docker buildx version >/dev/null 2>&1; then
    build_cli=docker
elif [[ -x /usr/bin/docker ]]; then
    build_cli=/usr/bin/docker
else
    echo "compose-smoke: no docker client that builds with BuildKit" >&2
    exit 1
fi

# --- 2. the engine -------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
    mkdir -p "${cache}"
    step "starting dockerd (log: ${cache}/dockerd.log)"
    dockerd >"${cache}/dockerd.log" 2>&1 &
    started_dockerd=$!
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        kill -0 "${started_dockerd}" 2>/dev/null || {
            tail -20 "${cache}/dockerd.log" >&2
            exit 1
        }
        sleep 1
    done
    docker info >/dev/null
fi

# --- 3. stand-in base images -----------------------------------------------------------------
debian_mirror() {
    if [[ -n "${CARRIL_SMOKE_DEBIAN_MIRROR:-}" ]]; then
        echo "${CARRIL_SMOKE_DEBIAN_MIRROR}"
        return
    fi
    local found
    found="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '$1 == "URIs:" { print $2; exit }')"
    [[ -n "${found}" ]] ||
        found="$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)"
    echo "${found:-http://deb.debian.org/debian}"
}

if ! docker image inspect "${base_image}" >/dev/null 2>&1; then
    mirror="$(debian_mirror)"
    step "debootstrap --variant=minbase bookworm from ${mirror}"
    debootstrap --variant=minbase bookworm "${workdir}/rootfs" "${mirror}" >"${workdir}/debootstrap.log" 2>&1 || {
        tail -20 "${workdir}/debootstrap.log" >&2
        exit 1
    }
    # apt's downloads and lists are not part of an image (the official ones drop them too).
    rm -rf "${workdir}"/rootfs/var/cache/apt/archives/*.deb "${workdir}"/rootfs/var/lib/apt/lists/*
    tar -C "${workdir}/rootfs" -c . | docker import --change 'CMD ["bash"]' - "${base_image}" >/dev/null
    rm -rf "${workdir}/rootfs"
fi

# Built every time: when nothing changed, the build cache answers in a second or two.
build() {
    local name="$1"
    shift
    if ! DOCKER_BUILDKIT=1 "${build_cli}" build --progress=plain "$@" >"${workdir}/${name}.log" 2>&1; then
        tail -60 "${workdir}/${name}.log" >&2
        echo "compose-smoke: building ${name} failed" >&2
        return 1
    fi
}
step "stand-in images ${python_image} and ${postgres_image}"
build python-standin -f deploy/standin/python.Dockerfile -t "${python_image}" \
    --build-arg BASE_IMAGE="${base_image}" deploy/standin
build postgres-standin -f deploy/standin/postgres.Dockerfile -t "${postgres_image}" \
    --build-arg BASE_IMAGE="${base_image}" deploy/standin

# --- 4. the images -------------------------------------------------------------------------
# The wheels both images need, fetched by the host's pip with the host's settings (index,
# certificates, the local wheel store with the pinned CUDA build of torch), once per
# change of the requirements.
wheels="${cache}/wheels"
pip_download() {
    # Quiet unless it fails: pip warns about every index in its settings that lacks a package.
    if ! "${host_python}" -m pip download --quiet --dest "${wheels}" "$@" >"${workdir}/pip.log" 2>&1; then
        grep -v "is neither a file nor a directory" "${workdir}/pip.log" >&2
        return 1
    fi
}
# What the wheels were fetched for: the requirements and this fetch step itself.
stamp="$(cat requirements/web.txt requirements/gpu.txt "$0" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "${wheels}/.requirements.sha256" 2>/dev/null || true)" != "${stamp}" ]]; then
    step "fetching wheels into ${wheels}"
    mkdir -p "${wheels}"
    pip_download -r requirements/web.txt -r requirements/gpu.txt
    # Dockerfile.gpu swaps opencv-python for the headless build of the same version.
    # The version requirements/gpu.txt pins (the cache may also hold older downloads).
    opencv="$(sed -n 's/^opencv-python==//p' requirements/gpu.txt)"
    if [[ -z "${opencv}" ]]; then
        opencv="$(find "${wheels}" -name 'opencv_python-*.whl' -printf '%f\n' | sort -V | tail -1 | cut -d- -f2)"
    fi
    pip_download --no-deps "opencv-python-headless==${opencv}"
    echo "${stamp}" >"${wheels}/.requirements.sha256"
fi

if "${host_python}" -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "${wheel_port}" 2>/dev/null; then
    echo "compose-smoke: 127.0.0.1:${wheel_port} is taken; set CARRIL_SMOKE_WHEEL_PORT" >&2
    exit 1
fi
"${host_python}" -m http.server --bind 127.0.0.1 --directory "${wheels}" "${wheel_port}" \
    >"${workdir}/wheels.log" 2>&1 &
wheel_server=$!

# pip's settings go in as build arguments that only the build stage declares; the build
# runs on the host's network to reach them. The `# syntax=` line is left out: it would
# fetch the Dockerfile frontend from Docker Hub, and the daemon's own frontend reads the
# same instructions.
image_build() {
    local name="$1"
    step "building carril-${name}:${tag} (Dockerfile.${name})"
    sed '1{/^# syntax=/d}' "Dockerfile.${name}" >"${workdir}/Dockerfile.${name}"
    build "${name}" --network=host -f "${workdir}/Dockerfile.${name}" -t "carril-${name}:${tag}" \
        --build-arg PYTHON_IMAGE="${python_image}" \
        --build-arg PIP_NO_INDEX=1 \
        --build-arg PIP_FIND_LINKS="http://127.0.0.1:${wheel_port}/" \
        .
}
image_build web
image_build gpu
kill "${wheel_server}"
wait "${wheel_server}" 2>/dev/null || true
wheel_server=""

# --- 5. the images' promises, then the Compose smoke test --------------------------------------
step "checking the images"
for name in web gpu; do
    image="carril-${name}:${tag}"
    # Read whole, then searched: `cmd | grep -q` under pipefail can miss a match (SIGPIPE).
    image_record="$(docker image inspect "${image}"; docker history --no-trunc "${image}")"
    if grep -q -e PIP_ -e "127.0.0.1:${wheel_port}" <<<"${image_record}"; then
        echo "compose-smoke: ${image} keeps the build's pip settings" >&2
        exit 1
    fi
    user="$(docker image inspect -f '{{.Config.User}}' "${image}")"
    [[ "${user}" == 10001:10001 ]] || {
        echo "compose-smoke: ${image} runs as ${user:-root}" >&2
        exit 1
    }
done
if docker run --rm --entrypoint python "carril-web:${tag}" -c "import torch" 2>/dev/null; then
    echo "compose-smoke: torch is importable in the web image" >&2
    exit 1
fi
torch="$(docker run --rm --entrypoint python "carril-gpu:${tag}" -c \
    "import torch; print(torch.__version__, torch.version.cuda)")"
pinned="$(awk -F'==' '$1 == "torch" { print $2 }' requirements/gpu.txt)"
[[ "${torch%% *}" == "${pinned}"* && "${torch##* }" != None ]] || {
    echo "compose-smoke: the GPU image has torch ${torch}, not the CUDA build of ${pinned}" >&2
    exit 1
}
for name in web gpu; do
    size="$(docker image inspect -f '{{.Size}}' "carril-${name}:${tag}")"
    step "carril-${name}:${tag}: $((size / 1000000)) MB"
done
step "GPU image: torch ${torch% *}, CUDA ${torch##* }"

if [[ -n "${CARRIL_SMOKE_BUILD_ONLY:-}" ]]; then
    step "images built and checked (CARRIL_SMOKE_BUILD_ONLY)"
    exit 0
fi

smoke_python=python3
python3 -c "import yaml" 2>/dev/null || smoke_python="${host_python}"
web_port="$("${host_python}" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")"
step "Compose smoke test (${smoke_script})"
CARRIL_IMAGE_TAG="${tag}" \
    CARRIL_WEB_PORT="${web_port}" \
    CARRIL_SMOKE_IMAGES="db=${postgres_image}" \
    CARRIL_SMOKE_PYTHON="${smoke_python}" \
    bash "${smoke_script}"
step "passed"
