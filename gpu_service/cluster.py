"""How a Carril host declares itself to a Ray cluster, defined once.

A GPU host runs one Ray node. The node declares its GPUs (`num_gpus`), the memory of
those GPUs as a custom resource (`carril_gpu_mib`: GPUs x MiB each, so Ray only places a
job where its memory estimate fits) and two labels Carril reads back for its inventory:
the host's name and the memory of one GPU. `make run-cluster`, the tests' local cluster,
the Compose node service and docs/scale-out.md all build nodes from here.

The environment keeps Ray on loopback when asked to (one-machine clusters), silent (no
usage stats) and offline (no runtime_env downloads are ever requested by Carril).

Settings of a node started by `node_exec` (Compose's `ray-head` and `ray-node`):
CARRIL_RAY_NODE_IP, the address the node advertises (Ray's default: the machine's
network address; a loopback address keeps a one-machine cluster on 127.0.0.1), and
CARRIL_RAY_NODE_PORTS, the first of a block of `NODE_PORT_BLOCK` ports the node's
processes use (Ray's default: random ports and one worker range shared by every node of a
machine, which collide when several nodes share a host's network).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MEMORY_RESOURCE = "carril_gpu_mib"
HOST_LABEL = "carril-host"
GPU_MIB_LABEL = "carril-gpu-mib"
NAMESPACE = "carril"
OBJECT_STORE_BYTES = 80 * 1024 * 1024  # Carril passes small messages, never tensors
NODE_PORT_BLOCK = 100  # ports per node under CARRIL_RAY_NODE_PORTS; workers take the last 90


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

    def start_argv(
        self,
        *,
        ray: str,
        address: str | None,
        port: int | None = None,
        node_ip: str | None = None,
        ports_from: int | None = None,
    ) -> list[str]:
        """`ray start ... --block` for this node: the head when `address` is None.

        `node_ip`: the address the node advertises; `ports_from`: the first port of the
        node's block (`node_port_args`)."""
        argv = [ray, "start", "--block", "--disable-usage-stats"]
        if address is None:
            argv += ["--head", "--include-dashboard=false"]
            if port is not None:
                argv += [f"--port={port}"]
        else:
            argv += [f"--address={address}"]
        if node_ip:
            argv += [f"--node-ip-address={node_ip}"]
        if ports_from is not None:
            argv += node_port_args(ports_from)
        argv += [
            f"--num-cpus={self.num_cpus}",
            f"--num-gpus={self.num_gpus}",
            f"--object-store-memory={self.object_store_bytes}",
            f"--resources={json.dumps(self.resources)}",
            "--labels=" + ",".join(f"{k}={v}" for k, v in self.labels.items()),
        ]
        return argv


def node_port_args(first: int) -> list[str]:
    """`ray start` options that put every port of one node in [first, first + 100).

    Ray otherwise picks its node's ports at random and gives every node of a machine the
    same worker range (10002-19999), handed out from its start: two nodes sharing a
    host's network (Compose's `network_mode: host`) would give their first workers the
    same port. Fixed ports are also what a firewall between hosts can allow.
    """
    if not 1024 <= first <= 65536 - NODE_PORT_BLOCK:
        raise ValueError(f"CARRIL_RAY_NODE_PORTS: {first} leaves no block of {NODE_PORT_BLOCK}")
    return [
        f"--node-manager-port={first}",
        f"--object-manager-port={first + 1}",
        f"--metrics-export-port={first + 2}",
        f"--dashboard-agent-listen-port={first + 3}",
        f"--dashboard-agent-grpc-port={first + 4}",
        f"--runtime-env-agent-port={first + 5}",
        f"--min-worker-port={first + 10}",
        f"--max-worker-port={first + NODE_PORT_BLOCK - 1}",
    ]


def is_loopback(address: str | None) -> bool:
    return address in ("127.0.0.1", "localhost")


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
    # With usage stats off, a head started by `ray start` (not `ray.init`) still sends
    # one report, that they are off, to usage-stats.ray.io. Sent here, it goes nowhere.
    env["RAY_USAGE_STATS_REPORT_URL"] = USAGE_REPORT_NOWHERE
    if loopback:
        env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    return env


USAGE_REPORT_NOWHERE = "http://127.0.0.1:9/"  # the discard port: nothing listens here
BOOTSTRAP_CONFIG = "ray_bootstrap_config.yaml"


def head_home(root: Path | None = None) -> Path:
    """A home folder for the Ray head's processes, holding `ray_bootstrap_config.yaml`.

    Ray always starts a dashboard process on the head, even with the dashboard off, and
    with usage stats off that process still describes the cluster once at start: from
    `~/ray_bootstrap_config.yaml` when there is one (clusters Ray's launcher made), else
    by asking the Azure, GCP and AWS metadata addresses (169.254.169.254,
    metadata.google.internal) which cloud it runs on. This file says "local", so it asks
    nobody. Set HOME to this folder for the head's processes only.
    """
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="carril-ray-head-", dir=root))
    (home / BOOTSTRAP_CONFIG).write_text(
        "# Carril's Ray head: read by Ray's dashboard instead of cloud metadata lookups.\n"
        "provider:\n  type: local\n"
    )
    return home


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
        # The head's processes inherit this process's environment when they start: they
        # get head_home() as HOME, and this process keeps its own.
        home = os.environ.get("HOME")
        self._head_home = head_home()
        os.environ["HOME"] = str(self._head_home)
        try:
            self._cluster = Cluster(
                initialize_head=True,
                head_node_args={
                    **head.node_args(),
                    "node_ip_address": LOOPBACK,
                    "include_dashboard": False,
                    "_system_config": LOCAL_SYSTEM_CONFIG,
                },
            )
        finally:
            if home is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = home
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
        import shutil

        import ray

        if ray.is_initialized():  # a driver in this process would forbid removing the head
            ray.shutdown()
        self._cluster.shutdown()
        self.nodes.clear()
        shutil.rmtree(self._head_home, ignore_errors=True)


def node_exec(*, address: str | None, host: str, num_cpus: int) -> None:
    """Replace this process with `ray start --block` for this host's node (Compose's
    `ray-node` and `ray-head` services). GPUs come from the GPU service's runtime: NVML
    on a real host, CARRIL_SIMULATED_GPUS under the simulated runtime. CARRIL_RAY_PORT
    (the head's GCS), CARRIL_RAY_NODE_IP and CARRIL_RAY_NODE_PORTS (module docstring)."""
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
    node_ip = os.environ.get("CARRIL_RAY_NODE_IP") or None
    ports_from = os.environ.get("CARRIL_RAY_NODE_PORTS") or None
    argv = declaration.start_argv(
        ray=ray,
        address=address,
        port=port,
        node_ip=node_ip,
        ports_from=int(ports_from) if ports_from else None,
    )
    if address is not None and is_loopback(node_ip):
        start_on_loopback(argv, node_ip=str(node_ip))
        return
    if address is None:
        os.environ["HOME"] = str(head_home())  # the head asks no cloud which it is
    os.environ.update(ray_environment(loopback=is_loopback(node_ip)))
    os.execv(ray, argv)  # noqa: S606 - the node is this process from here on


def start_on_loopback(argv: list[str], *, node_ip: str) -> None:
    """`ray start` (argv) for a node that joins a head on 127.0.0.1, run in this process.

    Ray's CLI cannot do it alone: with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (what keeps
    Ray's own "my address" lookups on loopback) it refuses to start any node but a head,
    and without it, it rewrites 127.0.0.1 in `--node-ip-address` and `--address` into the
    machine's network address. So the CLI runs here with the switch on for its refusal
    and its lookup of this machine's address answering `node_ip`, and the processes it
    starts (raylet, workers) inherit the switch off. Ray 2.60's private names: the
    Compose cluster smoke test and tests/gpu_service/executors/test_local_cluster.py
    check that a node still joins on loopback.
    """
    import os
    import sys

    import ray._private.ray_constants as ray_constants
    import ray._private.services as services
    from ray.scripts.scripts import main as ray_cli

    def node_ip_address(address: str | None = None) -> str:
        return node_ip

    ray_constants.ENABLE_RAY_CLUSTER = True
    services.get_node_ip_address = node_ip_address
    os.environ.update(ray_environment(loopback=True))
    sys.argv = argv
    ray_cli()


def driver_connect(address: str) -> Any:
    """Join the cluster at `address` (host:port of its head) as a driver, in Carril's
    namespace, quietly; returns the `ray` module. Ray reads its environment when imported:
    a loopback address keeps this process's Ray traffic on loopback."""
    import logging
    import os
    from urllib.parse import urlsplit

    os.environ.update(ray_environment(loopback=is_loopback(urlsplit(f"//{address}").hostname)))
    import ray

    if not ray.is_initialized():
        ray.init(
            address=address,
            namespace=NAMESPACE,
            log_to_driver=False,
            logging_level=logging.WARNING,
            configure_logging=False,
        )
    return ray


def nodes_print(address: str) -> int:
    """`python -m gpu_service.cluster nodes HEAD:PORT`: the cluster's alive nodes as a
    driver sees them (what the GPU service would), one JSON list on stdout: each node's
    host label, address, GPUs and memory per GPU. Run where a driver may run (on a
    machine with a Ray node; in Compose, in the `gpu` container)."""
    import json

    ray = driver_connect(address)
    try:
        nodes = [
            {
                "host": node.get("Labels", {}).get(HOST_LABEL),
                "address": node.get("NodeManagerAddress"),
                "gpus": int(node.get("Resources", {}).get("GPU", 0)),
                "gpu_mib": int(node.get("Labels", {}).get(GPU_MIB_LABEL, 0)),
            }
            for node in ray.nodes()
            if node.get("Alive")
        ]
    finally:
        ray.shutdown()
    print(json.dumps(sorted(nodes, key=lambda n: str(n["host"]))), flush=True)
    return 0


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
    """`python -m gpu_service.cluster` (a local cluster), `... head`, `... node ADDRESS`
    or `... nodes ADDRESS`."""
    import os
    import socket

    from gpu_service.storage import PRIVATE_UMASK

    # The Ray processes started from here (raylet, workers, the job actors) inherit it.
    os.umask(PRIVATE_UMASK)
    host = os.environ.get("CARRIL_NODE_NAME") or socket.gethostname()
    cpus = int(os.environ.get("CARRIL_NODE_CPUS", "4"))
    # node_exec returns only where `ray start` ran in this process and ended.
    if argv[:1] == ["head"]:
        node_exec(address=None, host=host, num_cpus=1)
        return 0
    if argv[:1] == ["node"] and len(argv) == 2:
        node_exec(address=argv[1], host=host, num_cpus=cpus)
        return 0
    if argv[:1] == ["nodes"] and len(argv) == 2:
        return nodes_print(argv[1])
    if argv:
        raise SystemExit(
            "usage: python -m gpu_service.cluster [head | node HEAD:PORT | nodes HEAD:PORT]"
        )
    return main()


if __name__ == "__main__":
    import sys

    raise SystemExit(cli(sys.argv[1:]))
