"""`make run-cluster`: `make run`, with its jobs on a Ray cluster on this machine.

Starts a Ray head and CARRIL_CLUSTER_NODES (default 2) local nodes, each declaring
CARRIL_SIMULATED_GPUS on the simulated runtime, all on 127.0.0.1
(`python -m gpu_service.cluster`); then runs exactly what `make run` runs (same ports,
demo user and output: `carril_run.run`, command lines from carril_stack) with the GPU
service in Ray mode (CARRIL_EXECUTOR=ray, CARRIL_RAY_ADDRESS). Ctrl-C or SIGTERM stops
Carril, then the cluster. docs/scale-out.md says how the same pieces run on several
machines.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import carril_run

ROOT = Path(__file__).resolve().parent
CLUSTER_START_TIMEOUT_S = 180.0
CLUSTER_STOP_GRACE_S = 30.0


def cluster_start(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """Start the local cluster; return it and its address once every node is up."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gpu_service.cluster"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # Ctrl-C reaches Carril first; the cluster stops last
    )
    deadline = time.monotonic() + CLUSTER_START_TIMEOUT_S
    assert process.stdout is not None
    for line in process.stdout:
        carril_run.log(f"cluster: {line.rstrip()}")
        if line.startswith("ray address: "):
            return process, line.split(": ", 1)[1].strip()
        if time.monotonic() > deadline:
            break
    cluster_stop(process)
    raise SystemExit("the Ray cluster did not start; see the output above")


def cluster_stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=CLUSTER_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    carril_run.log("Ray cluster stopped")


def main() -> int:
    # make run's environment, secrets and all; the demo password only if this start made it
    env, demo_password = carril_run.build_environment()
    env.setdefault("CARRIL_CLUSTER_NODES", "2")
    env.setdefault("CARRIL_GPU_RUNTIME", "simulated")
    carril_run.log(f"starting a Ray head and {env['CARRIL_CLUSTER_NODES']} node(s) on 127.0.0.1")
    cluster, address = cluster_start(env)
    env.update(
        {
            "CARRIL_EXECUTOR": "ray",
            "CARRIL_RAY_ADDRESS": address,
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # the GPU service dials 127.0.0.1
            "RAY_USAGE_STATS_ENABLED": "0",
        }
    )
    try:
        return carril_run.run(env=env, demo_password=demo_password)
    finally:
        cluster_stop(cluster)


if __name__ == "__main__":
    sys.exit(main())
