"""How a Compose Ray node starts: its address and its ports (CARRIL_RAY_NODE_IP,
CARRIL_RAY_NODE_PORTS), and the way round Ray's CLI for a node on loopback."""

from __future__ import annotations

import os
import re
import sys

import pytest

from gpu_service import cluster
from gpu_service.cluster import NODE_PORT_BLOCK, NodeDeclaration, node_port_args


class Started(Exception):
    """Stands for the process that would replace the test's."""


def ports_of(argv: list[str]) -> set[int]:
    """Every port the options name, the worker range whole."""
    options = dict(re.findall(r"^--([a-z-]+)=(\d+)$", "\n".join(argv), flags=re.MULTILINE))
    ports = {int(v) for k, v in options.items() if k.endswith("-port") and "worker" not in k}
    return ports | set(range(int(options["min-worker-port"]), int(options["max-worker-port"]) + 1))


def node_argv(**kwargs) -> list[str]:
    node = NodeDeclaration(host="gpu-a", gpu_mib=[24576, 24576], num_cpus=2)
    return node.start_argv(ray="ray", address="127.0.0.1:26379", **kwargs)


def test_a_node_given_an_address_and_a_port_block_advertises_one_and_keeps_to_the_other():
    argv = node_argv(node_ip="127.0.0.1", ports_from=26500)

    assert "--node-ip-address=127.0.0.1" in argv
    assert "--address=127.0.0.1:26379" in argv
    assert "--min-worker-port=26510" in argv
    assert ports_of(argv) <= set(range(26500, 26500 + NODE_PORT_BLOCK))
    assert len(ports_of(argv)) == 6 + 90  # six servers, then the workers


def test_nodes_in_consecutive_blocks_share_no_port():
    first = ports_of(node_argv(ports_from=26500))
    second = ports_of(node_argv(ports_from=26500 + NODE_PORT_BLOCK))
    assert not first & second


def test_without_the_settings_a_node_keeps_rays_own_choices():
    argv = node_argv()
    assert not [a for a in argv if a.startswith("--node-ip-address")]
    assert not [a for a in argv if re.match(r"--[a-z-]+-port=", a)]


@pytest.mark.parametrize("first", [80, 65500])
def test_a_block_that_does_not_fit_among_the_unprivileged_ports_is_refused(first):
    with pytest.raises(ValueError, match="CARRIL_RAY_NODE_PORTS"):
        node_port_args(first)


def _settings(monkeypatch, tmp_path, **env: str) -> None:
    for name in (
        "CARRIL_RAY_NODE_IP",
        "CARRIL_RAY_NODE_PORTS",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER",
    ):
        monkeypatch.delenv(name, raising=False)  # restored after the test, whatever runs
    for name in ("HOME", "RAY_USAGE_STATS_REPORT_URL"):  # a head's start sets them here
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CARRIL_STORAGE", str(tmp_path))
    monkeypatch.setenv("CARRIL_GPU_RUNTIME", "simulated")
    monkeypatch.setenv("CARRIL_SIMULATED_GPUS", "2x24GiB")
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def _exec_caught(monkeypatch) -> list[list[str]]:
    calls: list[list[str]] = []

    def execv(path: str, argv: list[str]) -> None:
        calls.append(argv)
        raise Started

    monkeypatch.setattr(os, "execv", execv)
    return calls


def test_a_head_on_loopback_is_rays_cli_with_its_address_lookups_kept_on_loopback(
    monkeypatch, tmp_path
):
    _settings(
        monkeypatch,
        tmp_path,
        CARRIL_RAY_PORT="26379",
        CARRIL_RAY_NODE_IP="127.0.0.1",
        CARRIL_RAY_NODE_PORTS="26400",
    )
    calls = _exec_caught(monkeypatch)

    with pytest.raises(Started):
        cluster.cli(["head"])

    argv = calls[0]
    assert argv[1:4] == ["start", "--block", "--disable-usage-stats"]
    assert {"--head", "--port=26379", "--node-ip-address=127.0.0.1"} <= set(argv)
    assert ports_of(argv) <= set(range(26400, 26500))
    assert os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"


def test_a_node_joining_on_loopback_runs_rays_cli_in_this_process(monkeypatch, tmp_path):
    _settings(monkeypatch, tmp_path, CARRIL_RAY_NODE_IP="127.0.0.1", CARRIL_NODE_NAME="gpu-a")
    calls = _exec_caught(monkeypatch)
    started: list[tuple[list[str], str]] = []
    monkeypatch.setattr(
        cluster, "start_on_loopback", lambda argv, *, node_ip: started.append((argv, node_ip))
    )

    cluster.cli(["node", "127.0.0.1:26379"])

    assert calls == []  # not replaced by `ray start`, which would refuse or leave loopback
    argv, node_ip = started[0]
    assert node_ip == "127.0.0.1"
    assert {"--address=127.0.0.1:26379", "--num-gpus=2", "--node-ip-address=127.0.0.1"} <= set(argv)
    assert "--labels=carril-host=gpu-a,carril-gpu-mib=24576" in argv


def test_a_node_on_the_network_is_replaced_by_ray_start_as_before(monkeypatch, tmp_path):
    _settings(monkeypatch, tmp_path, CARRIL_RAY_NODE_IP="10.0.0.7")
    calls = _exec_caught(monkeypatch)

    with pytest.raises(Started):
        cluster.cli(["node", "head.internal:6379"])

    assert "--node-ip-address=10.0.0.7" in calls[0]
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ


def test_rays_cli_run_for_a_loopback_node_sees_loopback_as_this_machines_address(monkeypatch):
    pytest.importorskip("ray")
    import ray._private.ray_constants as ray_constants
    import ray._private.services as services
    import ray.scripts.scripts as ray_scripts

    # Put back after the test what start_on_loopback changes for good in its process.
    monkeypatch.setattr(services, "get_node_ip_address", services.get_node_ip_address)
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)  # as if imported under "0"
    monkeypatch.setattr(sys, "argv", sys.argv)
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    seen = {}

    def cli() -> None:
        seen["argv"] = list(sys.argv)
        seen["node"] = services.resolve_ip_for_localhost("127.0.0.1")
        seen["gcs"] = services.canonicalize_bootstrap_address("127.0.0.1:26379")
        seen["refuses other nodes"] = not ray_constants.ENABLE_RAY_CLUSTER
        seen["children's switch"] = os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"]

    monkeypatch.setattr(ray_scripts, "main", cli)

    cluster.start_on_loopback(["ray", "start", "--block"], node_ip="127.0.0.1")

    assert seen == {
        "argv": ["ray", "start", "--block"],
        "node": "127.0.0.1",
        "gcs": "127.0.0.1:26379",
        "refuses other nodes": False,
        "children's switch": "0",
    }


def test_a_head_asks_no_cloud_which_it_is_and_sends_its_usage_report_nowhere(monkeypatch, tmp_path):
    _settings(monkeypatch, tmp_path, CARRIL_RAY_PORT="26379")
    calls = _exec_caught(monkeypatch)
    with pytest.raises(Started):
        cluster.cli(["head"])
    assert calls, "the head was not started"

    import requests
    from ray._common.usage import usage_lib

    def no_request(*args, **kwargs):
        raise AssertionError(f"Ray asked the network: {args}")

    monkeypatch.setattr(requests, "get", no_request)
    home = os.environ["HOME"]
    # What Ray's dashboard process does at start, usage stats on or off, with this HOME.
    described = usage_lib.get_cluster_config_to_report(
        os.path.join(home, "ray_bootstrap_config.yaml")
    )
    assert described.cloud_provider == "local"
    assert usage_lib._usage_stats_report_url() == "http://127.0.0.1:9/"
