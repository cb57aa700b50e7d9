"""How a Carril host declares itself to a Ray cluster, defined once.

A GPU host runs one Ray node. The node declares its GPUs (`num_gpus`), the memory of
those GPUs as a custom resource (`carril_gpu_mib`: GPUs x MiB each, so Ray only places a
job where its memory estimate fits) and two labels Carril reads back for its inventory:
the host's name and the memory of one GPU. `make run-cluster`, the tests' local cluster,
the Compose node service and docs/scale-out.md all build nodes from here.

The environment keeps Ray on loopback when asked to (one-machine clusters), silent (no
usage stats) and offline (no runtime_env downloads are ever requested by Carril).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

MEMORY_RESOURCE = "carril_gpu_mib"
HOST_LABEL = "carril-host"
GPU_MIB_LABEL = "carril-gpu-mib"
NAMESPACE = "carril"
OBJECT_STORE_BYTES = 80 * 1024 * 1024  # Carril passes small messages, never tensors


@dataclass(frozen=True)
class NodeDeclaration:
    """What one Ray node says about itself."""

    host: str
    gpu_mib: list[int]  # memory of each GPU, MiB
    num_cpus: int = 2
    object_store_bytes: int = OBJECT_STORE_BYTES
    extra_labels: dict[str, str] = field(default_factory=dict)

    @property
    def num_gpus(self) -> int:
        return len(self.gpu_mib)

    @property
    def resources(self) -> dict[str, float]:
        return {MEMORY_RESOURCE: float(sum(self.gpu_mib))} if self.gpu_mib else {}

    @property
    def labels(self) -> dict[str, str]:
        # Per-GPU memory as one number: Carril's nodes hold one model of GPU each; a
        # mixed host declares its smallest, so no request is promised more than it gets.
        per_gpu = min(self.gpu_mib) if self.gpu_mib else 0
        return {HOST_LABEL: self.host, GPU_MIB_LABEL: str(per_gpu), **self.extra_labels}

    def node_args(self) -> dict[str, object]:
        """Keyword arguments of `ray.cluster_utils.Cluster.add_node`."""
        return {
            "num_cpus": self.num_cpus,
            "num_gpus": self.num_gpus,
            "resources": self.resources,
            "labels": self.labels,
            "object_store_memory": self.object_store_bytes,
        }

    def start_argv(self, *, ray: str, address: str | None, port: int | None = None) -> list[str]:
        """`ray start ... --block` for this node: the head when `address` is None."""
        argv = [ray, "start", "--block", "--disable-usage-stats"]
        if address is None:
            argv += ["--head", "--include-dashboard=false"]
            if port is not None:
                argv += [f"--port={port}"]
        else:
            argv += [f"--address={address}"]
        argv += [
            f"--num-cpus={self.num_cpus}",
            f"--num-gpus={self.num_gpus}",
            f"--object-store-memory={self.object_store_bytes}",
            f"--resources={json.dumps(self.resources)}",
            "--labels=" + ",".join(f"{k}={v}" for k, v in self.labels.items()),
        ]
        return argv


def head_declaration(*, host: str = "head") -> NodeDeclaration:
    """The head holds no GPU: it runs Ray's control plane next to the GPU service."""
    return NodeDeclaration(host=host, gpu_mib=[], num_cpus=1)


def ray_environment(*, loopback: bool, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables every Ray process of a Carril cluster gets.

    `loopback`: one-machine clusters (tests, `make run-cluster`) advertise and dial
    127.0.0.1 only; by default Ray would use the machine's network address.
    """
    env = dict(base or {})
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    if loopback:
        env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    return env


# ---- a cluster on this one machine (make run-cluster, the tests) ------------------------

# A node that stops answering is declared dead after ~3 s instead of Ray's default ~15 s;
# tests and the demo then see a lost node's jobs resume promptly.
LOOPBACK = "127.0.0.1"
LOCAL_SYSTEM_CONFIG = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}


class LocalCluster:
    """A Ray head and `nodes` GPU nodes on 127.0.0.1, as child processes of the caller.

    Uses `ray.cluster_utils.Cluster`, Ray's own multi-node-on-one-host harness. Ray reads
    its environment when imported, so `ray_environment(loopback=True)` is applied to
    this process before the import, and every node is also given 127.0.0.1 as its
    address outright (in case Ray was imported earlier). Stop it with `shutdown()`
    (also registered at exit, and Ray's reaper kills the nodes if this process dies).
    """

    def __init__(self, *, nodes: int, gpus: str, num_cpus: int = 2) -> None:
        import os

        os.environ.update(ray_environment(loopback=True))
        # The nodes declare simulated GPUs; a CUDA_VISIBLE_DEVICES left in this process
        # (ultralytics sets it to -1 whenever it runs on the CPU here) makes Ray refuse to
        # start a node that declares GPUs. The nodes inherit this environment.
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        from ray.cluster_utils import Cluster

        from gpu_service.runtime.simulated import parse_simulated_gpus

        self._gpu_mib = parse_simulated_gpus(gpus)
        self._num_cpus = num_cpus
        head = head_declaration()
        self._cluster = Cluster(
            initialize_head=True,
            head_node_args={
                **head.node_args(),
                "node_ip_address": LOOPBACK,
                "include_dashboard": False,
                "_system_config": LOCAL_SYSTEM_CONFIG,
            },
        )
        self.nodes: dict[str, object] = {}
        for index in range(nodes):
            self.node_add(host=f"node-{index}")

    @property
    def address(self) -> str:
        return str(self._cluster.address)

    def node_add(self, *, host: str) -> None:
        declaration = NodeDeclaration(host=host, gpu_mib=self._gpu_mib, num_cpus=self._num_cpus)
        self.nodes[host] = self._cluster.add_node(
            **declaration.node_args(), node_ip_address=LOOPBACK
        )

    def node_kill(self, host: str) -> None:
        """Kill every process of one node at once, as a power cut would."""
        node = self.nodes.pop(host)
        self._cluster.remove_node(node, allow_graceful=False)

    def node_addresses(self) -> list[str]:
        return [node.node_ip_address for node in self._cluster.list_all_nodes()]

    def shutdown(self) -> None:
        import ray

        if ray.is_initialized():  # a driver in this process would forbid removing the head
            ray.shutdown()
        self._cluster.shutdown()
        self.nodes.clear()


def node_exec(*, address: str | None, host: str, num_cpus: int) -> None:
    """Replace this process with `ray start --block` for this host's node (Compose's
    `ray-node` and `ray-head` services). GPUs come from the GPU service's runtime: NVML
    on a real host, CARRIL_SIMULATED_GPUS under the simulated runtime."""
    import os
    import shutil

    from gpu_service.runtime.select import runtime_select
    from gpu_service.settings import Settings

    if address is None:
        declaration = head_declaration(host=host)
    else:
        gpus = runtime_select(settings=Settings()).inventory()
        declaration = NodeDeclaration(
            host=host, gpu_mib=[gpu.memory_total_mib for gpu in gpus], num_cpus=num_cpus
        )
    ray = shutil.which("ray") or "ray"
    port = int(os.environ.get("CARRIL_RAY_PORT", "6379"))
    argv = declaration.start_argv(ray=ray, address=address, port=port)
    os.environ.update(ray_environment(loopback=False))
    os.execv(ray, argv)  # noqa: S606 - the node is this process from here on


def main() -> int:
    """`python -m gpu_service.cluster`: run a LocalCluster until SIGTERM or SIGINT.

    Started by `make run-cluster` (carril_cluster.py). Prints `ray address: <host:port>`
    once every node is up; CARRIL_CLUSTER_NODES nodes of CARRIL_SIMULATED_GPUS each. Dies
    with its parent: a launcher killed outright leaves no cluster behind (Ray's own
    reaper then stops the nodes).
    """
    import contextlib
    import ctypes
    import os
    import signal
    import threading

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    nodes = int(os.environ.get("CARRIL_CLUSTER_NODES", "2"))
    gpus = os.environ.get("CARRIL_SIMULATED_GPUS", "2x24GiB")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    cluster = LocalCluster(nodes=nodes, gpus=gpus)
    try:
        print(f"ray address: {cluster.address}", flush=True)
        print(f"{nodes} Ray node(s) of {gpus} on {LOOPBACK}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        cluster.shutdown()
        print("ray cluster stopped", flush=True)
    return 0


def cli(argv: list[str]) -> int:
    """`python -m gpu_service.cluster` (a local cluster), `... head` or `... node ADDRESS`."""
    import os
    import socket

    host = os.environ.get("CARRIL_NODE_NAME") or socket.gethostname()
    cpus = int(os.environ.get("CARRIL_NODE_CPUS", "4"))
    if argv[:1] == ["head"]:
        node_exec(address=None, host=host, num_cpus=1)
    if argv[:1] == ["node"] and len(argv) == 2:
        node_exec(address=argv[1], host=host, num_cpus=cpus)
    if argv:
        raise SystemExit("usage: python -m gpu_service.cluster [head | node HEAD:PORT]")
    return main()


if __name__ == "__main__":
    import sys

    raise SystemExit(cli(sys.argv[1:]))
