"""Spare Ray workers: a Python process started ahead on each GPU node, so a fresh
attempt's actor starts in it instead of waiting for Ray to spawn one (ADR 0052).

Ray gives every new actor a worker process of its own and, when the node has no idle
one, starts it on demand: a Python start and `import ray`, about 0.3-0.5 s on a quiet
machine and 1 s under load, paid by every training. Ray's raylet can start workers
ahead for a job and keep them idle for a while (`PrestartWorkers`, the mechanism behind
its own prestart for a cluster's first driver); an actor created afterwards takes one.
It has no public Python API, so it is called here over gRPC, as Ray's own clients do.

This is the Ray twin of the local executor's warm spare (ADR 0041) with the same rule:
a job never shares its process with another one. A prestarted worker has run nothing;
the actor that takes it is still one process per attempt, killed at its end.

Best effort: when the call fails (an older or newer Ray without it, a node going away)
the attempt starts cold, as before, and the failure is logged once per node.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

KEEP_ALIVE_S = 600  # how long Ray keeps a spare that nobody took (then its idle rules)
RPC_TIMEOUT_S = 5.0


class SpareWorkers:
    """Asks each GPU node's raylet for a spare worker of this driver's job: one when the
    node is first seen, one after every fresh actor sent there (the one it took), and
    one per node every `KEEP_ALIVE_S` so a quiet cluster keeps its spare."""

    def __init__(self, *, job_id: str, per_node: int = 1) -> None:
        self._job_id = bytes.fromhex(job_id)
        self._per_node = per_node
        self._stubs: dict[str, Any] = {}  # node id -> NodeManagerService stub
        self._asked_at: dict[str, float] = {}  # node id -> when a spare was last asked
        self._failed: set[str] = set()  # node ids whose failure was logged
        self._lock = threading.Lock()

    def keep(self, nodes: list[dict[str, Any]]) -> None:
        """A spare on every alive GPU node that got none for `KEEP_ALIVE_S`."""
        now = time.monotonic()
        for node in nodes:
            asked = self._asked_at.get(node["NodeID"])
            if asked is None or now - asked >= KEEP_ALIVE_S:
                self.replace(node)

    def replace(self, node: dict[str, Any]) -> Any:
        """Ask `node` for one more spare (after an actor took one). Never waits: returns
        the call's future (its failure is logged, once per node)."""
        node_id = node["NodeID"]
        self._asked_at[node_id] = time.monotonic()
        try:
            call = self._stub(node).PrestartWorkers.future(self._request(), timeout=RPC_TIMEOUT_S)
        except Exception as exc:  # best effort: the next actor there starts cold
            self._failure(node_id, exc)
            return None
        call.add_done_callback(
            lambda done: done.exception() and self._failure(node_id, done.exception())
        )
        return call

    def _failure(self, node_id: str, exc: BaseException) -> None:
        with self._lock:
            first = node_id not in self._failed
            self._failed.add(node_id)
        if first:
            log.warning(
                "node %s: no spare Ray worker, its actors start cold (%s)", node_id[:12], exc
            )

    def _request(self) -> Any:
        from ray.core.generated import common_pb2, node_manager_pb2

        request = node_manager_pb2.PrestartWorkersRequest(
            language=common_pb2.PYTHON,
            job_id=self._job_id,
            keep_alive_duration_secs=KEEP_ALIVE_S,
            num_workers=self._per_node,
        )
        # The default runtime environment: the one Carril's actors have (it sets none).
        request.runtime_env_info.serialized_runtime_env = "{}"
        return request

    def _stub(self, node: dict[str, Any]) -> Any:
        node_id = node["NodeID"]
        with self._lock:
            stub = self._stubs.get(node_id)
            if stub is None:
                import grpc
                from ray.core.generated import node_manager_pb2_grpc

                address = f"{node['NodeManagerAddress']}:{node['NodeManagerPort']}"
                stub = node_manager_pb2_grpc.NodeManagerServiceStub(grpc.insecure_channel(address))
                self._stubs[node_id] = stub
            return stub

    def forget(self, alive: set[str]) -> None:
        """Drop the channels of nodes that left the cluster."""
        with self._lock:
            for node_id in set(self._stubs) - alive:
                self._stubs.pop(node_id, None)
                self._asked_at.pop(node_id, None)
