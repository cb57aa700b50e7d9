"""The one-machine Ray cluster: every node on loopback, declaring what Carril reads; and a
node started as Compose starts one (`python -m gpu_service.cluster node`) joining it."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from gpu_service.cluster import GPU_MIB_LABEL, HOST_LABEL, MEMORY_RESOURCE, NODE_PORT_BLOCK


@functools.cache
def _nodes_seen_by_a_driver(address: str) -> list[dict]:
    """What a separate driver (as the GPU service is) sees when it joins the cluster."""
    script = (
        "import json, ray\n"
        f"ray.init(address={address!r}, log_to_driver=False)\n"
        "print(json.dumps([n for n in ray.nodes() if n['Alive']], default=str))\n"
        "ray.shutdown()\n"
    )
    env = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    return _last_json_line(["-c", script], env=env)


def _last_json_line(args: list[str], *, env: dict[str, str] | None = None) -> list[dict]:
    """The JSON on the last line a Python of this venv prints, run with `args`."""
    done = subprocess.run(
        [sys.executable, *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_node_of_the_local_cluster_is_on_loopback(ray_cluster):
    assert ray_cluster.address.startswith("127.0.0.1:")
    assert set(ray_cluster.node_addresses()) == {"127.0.0.1"}
    nodes = _nodes_seen_by_a_driver(ray_cluster.address)
    assert len(nodes) == 3
    assert {node["NodeManagerAddress"] for node in nodes} == {"127.0.0.1"}


def test_each_gpu_node_declares_its_gpus_their_memory_and_its_host(ray_cluster):
    nodes = _nodes_seen_by_a_driver(ray_cluster.address)
    gpu_nodes = sorted(
        (n for n in nodes if n["Resources"].get("GPU")), key=lambda n: n["Labels"][HOST_LABEL]
    )
    assert [n["Labels"][HOST_LABEL] for n in gpu_nodes] == ["node-0", "node-1"]
    for node in gpu_nodes:
        assert node["Resources"]["GPU"] == 2
        assert node["Resources"][MEMORY_RESOURCE] == 2 * 24 * 1024
        assert node["Labels"][GPU_MIB_LABEL] == str(24 * 1024)


def _nodes_command(address: str) -> list[dict]:
    """`python -m gpu_service.cluster nodes`: what deploy/compose-cluster-smoke.sh reads."""
    return _last_json_line(["-m", "gpu_service.cluster", "nodes", address])


def test_the_nodes_command_lists_every_node_with_its_host_address_and_gpus(ray_cluster):
    nodes = _nodes_command(ray_cluster.address)
    assert {n["address"] for n in nodes} == {"127.0.0.1"}
    gpu_nodes = [n for n in nodes if n["gpus"]]
    assert [(n["host"], n["gpus"], n["gpu_mib"]) for n in gpu_nodes] == [
        ("node-0", 2, 24 * 1024),
        ("node-1", 2, 24 * 1024),
    ]


def _free_block(start: int = 27000) -> int:
    """The first block of NODE_PORT_BLOCK ports from `start` that nothing listens on."""
    for first in range(start, 32000, NODE_PORT_BLOCK):
        with contextlib.ExitStack() as probes:
            try:
                for port in range(first, first + NODE_PORT_BLOCK):
                    probe = probes.enter_context(socket.socket())
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return first
    raise AssertionError("no free block of ports")


def _listening(pid: int) -> set[tuple[str, int]]:
    """The TCP ports the process and its descendants listen on."""
    root = psutil.Process(pid)
    found = set()
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            for conn in proc.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN:
                    found.add((conn.laddr.ip, conn.laddr.port))
    return found


def test_a_node_started_as_compose_starts_one_joins_on_loopback_within_its_ports(
    ray_cluster, tmp_path: Path
):
    """CARRIL_RAY_NODE_IP=127.0.0.1 with Ray's CLI, which alone would refuse the node or
    move it to the machine's network address; the switch Ray reads at import is left as
    this process has it (off), so the way round it is what lets the node join."""
    first = _free_block()
    env = {
        **os.environ,
        "CARRIL_NODE_NAME": "compose-node",
        "CARRIL_NODE_CPUS": "1",
        "CARRIL_RAY_NODE_IP": "127.0.0.1",
        "CARRIL_RAY_NODE_PORTS": str(first),
        "CARRIL_GPU_RUNTIME": "simulated",
        "CARRIL_SIMULATED_GPUS": "1x8GiB",
        "CARRIL_STORAGE": str(tmp_path),
        "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",  # nothing runs there to drain
    }
    with (tmp_path / "node.log").open("w") as log:
        node = subprocess.Popen(
            [sys.executable, "-m", "gpu_service.cluster", "node", ray_cluster.address],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while not (
            joined := [
                n for n in _nodes_command(ray_cluster.address) if n["host"] == "compose-node"
            ]
        ):
            assert node.poll() is None, (tmp_path / "node.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (tmp_path / "node.log").read_text()[-3000:]
            time.sleep(1)
        assert joined == [
            {"host": "compose-node", "address": "127.0.0.1", "gpus": 1, "gpu_mib": 8192}
        ]
        listening = _listening(node.pid)
        assert listening, "the node's processes listen on nothing"
        assert {ip for ip, _ in listening} <= {"127.0.0.1", "::ffff:127.0.0.1"}
        assert {port for _, port in listening} <= set(range(first, first + NODE_PORT_BLOCK))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGTERM)
        try:
            node.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(node.pid, signal.SIGKILL)
            node.wait(timeout=10)
    # Gone from the cluster before the next test counts its nodes.
    deadline = time.monotonic() + 30
    while any(n["host"] == "compose-node" for n in _nodes_command(ray_cluster.address)):
        assert time.monotonic() < deadline, "the stopped node is still listed"
        time.sleep(1)


def test_the_heads_dashboard_process_asks_no_cloud_and_reports_nowhere(ray_cluster):
    import psutil

    dashboards = [
        process
        for process in psutil.Process().children(recursive=True)
        if any(part.endswith("dashboard/dashboard.py") for part in process.cmdline())
    ]
    assert dashboards, "no dashboard process: Ray always starts one on the head"
    for dashboard in dashboards:
        env = dashboard.environ()
        # Its HOME holds the file Ray reads instead of asking cloud metadata addresses.
        assert (Path(env["HOME"]) / "ray_bootstrap_config.yaml").read_text().count("local")
        assert env["RAY_USAGE_STATS_REPORT_URL"] == "http://127.0.0.1:9/"
        assert env["RAY_USAGE_STATS_ENABLED"] == "0"
    assert os.environ.get("HOME") != dashboards[0].environ()["HOME"]  # ours is unchanged
