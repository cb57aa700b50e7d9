# Carril: `make run` starts the platform, `make test` runs the whole suite.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
REQS := requirements/web.txt requirements/gpu.txt requirements/dev.txt requirements/cli.txt

.PHONY: venv run run-cluster test test-fast lint format bench gpu-check compose-smoke \
	compose-cluster-smoke clean

venv: $(STAMP)

$(STAMP): $(REQS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt -r requirements/gpu.txt -r requirements/web.txt -r requirements/cli.txt
	@# The `carril` command (.venv/bin/carril), from this tree (ADR 0038).
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

run: venv
	$(PY) -m carril_run

# `make run` with its jobs on a local Ray cluster (head + CARRIL_CLUSTER_NODES nodes).
run-cluster: venv
	$(PY) -m carril_cluster

test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: venv
	$(PY) -m pytest -m "not slow and not browser" $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: venv
	$(PY) -m bench $(BENCH_ARGS)

gpu-check: venv
	$(PY) -m gpu_service.gpu_check

# Builds both images and runs the Compose project on the simulated runtime, on a machine
# without a container registry (scripts/compose-smoke-local.sh; docs/operations.md).
compose-smoke: venv
	bash scripts/compose-smoke-local.sh

# The same images, docker-compose.cluster.yml on this one machine: a Ray head, the GPU
# service in Ray mode and two GPU hosts' nodes on 127.0.0.1 (deploy/compose-cluster-smoke.sh).
compose-cluster-smoke: venv
	bash scripts/compose-smoke-local.sh cluster

clean:
	rm -rf $(VENV) var test-artifacts
