"""The one-machine Ray cluster: every node on loopback, declaring what Carril reads."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

from gpu_service.cluster import GPU_MIB_LABEL, HOST_LABEL, MEMORY_RESOURCE


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
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **env},
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
