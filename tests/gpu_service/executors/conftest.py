"""A local Ray cluster for the Ray executor's tests: a head and two nodes of 2 GPUs each.

Started once per session (a cluster costs seconds of these two cores) and torn down even
when a test fails; a test that kills a node gets it back before the next test.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

NODES = ("node-0", "node-1")


@pytest.fixture(scope="session")
def _local_cluster() -> Iterator[object]:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed")
    from gpu_service.cluster import LocalCluster

    cluster = LocalCluster(nodes=len(NODES), gpus="2x24GiB", num_cpus=2)
    try:
        yield cluster
    finally:
        cluster.shutdown()


@pytest.fixture
def ray_cluster(_local_cluster):
    """The session's cluster, with both GPU nodes up at the start of every test."""
    for host in NODES:
        if host not in _local_cluster.nodes:
            _local_cluster.node_add(host=host)
    return _local_cluster
