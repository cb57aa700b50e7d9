"""The Ray executor: attempts run as named, detached actors on a Ray cluster (ADR 0017).

Selected by `CARRIL_EXECUTOR=ray` with `CARRIL_RAY_ADDRESS`. The GPU service stays the
only process that talks to Ray and the only writer of the journal:

- **Inventory:** every GPU of every alive GPU node, with the node's host label and
  memory per GPU (declared by `gpu_service/cluster.py`). A GPU keeps its index for the
  life of the service (the index map is by host name), so admission's lanes stay put
  when a node leaves and comes back.
- **Launch:** one attempt = one actor named `<job id>/<attempt>` in the `carril`
  namespace (the attempt's submission id: Ray refuses a second live actor with it),
  asking Ray for the attempt's GPUs (whole GPUs of one node: an actor is one process; a
  share of one GPU when lanes are shared), one CPU, `max_restarts=0` (the journal owns
  retries). Admission's host is passed as a *soft* node affinity: Ray places the actor
  there when it can and anywhere that fits when that node is gone.
- **Reports:** each attempt has one long poll out at a time (`AttemptRunner.poll`: the
  actor answers as soon as the job sends a message, or after `LONG_POLL_S`); the answer
  goes to the manager as events tagged with (job id, attempt) and the next poll goes
  out at once. The actors are threaded, so a waiting poll never holds up a cancel. A
  poll that finds the actor dead (its node died, it crashed) ends the attempt with
  WORKER_CRASHED, which the manager turns into attempt + 1 for training.
- **Cancel:** the actor's stop flag, then `ray.kill` after `CARRIL_CANCEL_GRACE_S`.
- **Restart of the service:** `reattach` finds each running attempt's actor by name;
  live ones are polled again from the last message the previous service acknowledged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time
from dataclasses import dataclass, field, fields
from typing import Any

from gpu_service.cluster import GPU_MIB_LABEL, HOST_LABEL, NAMESPACE, driver_connect
from gpu_service.errors import Cancelled, CarrilError, WorkerCrashed, error_from_dict
from gpu_service.executors.base import (
    Attempt,
    AttemptEnded,
    AttemptHeartbeat,
    EpochReported,
    EventSink,
    MetricsReported,
    ProgressReported,
)
from gpu_service.executors.ray_node import AttemptRunner, ResidentRunner, boot_dict, order_dict
from gpu_service.executors.ray_spares import SpareWorkers
from gpu_service.runtime.base import GpuInfo, LaneLoad, RuntimeName
from gpu_service.runtime.simulated import IDLE_USED_MIB
from gpu_service.settings import Settings
from gpu_service.workers.child import JobOrder, WorkerBoot
from gpu_service.workers.env import worker_env

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.25  # the tick: starts, cancel deadlines, polls that failed
LONG_POLL_S = 1.0  # an actor answers a poll at its first new message, or after this
MIN_POLL_GAP_S = 0.05  # a chatty job is asked at most 20 times a second
ACTOR_THREADS = 4  # a waiting poll, a cancel, a describe (resident: one job, old polls)
POLL_TIMEOUT_S = 10.0  # reattach: how long a found actor may take to answer
HEARTBEAT_INTERVAL_S = 2.0
RESIDENT_PREFIX = "resident/"
INVENTORY_TTL_S = 1.0  # ray.nodes() is a call to the head; the API may ask often


@dataclass
class _Running:
    attempt: Attempt
    actor: Any
    host: str
    cursor: int = 0
    started: bool = False
    cancel_deadline: float | None = None
    last_heartbeat: float = 0.0
    start: concurrent.futures.Future[Any] | None = None
    poll: concurrent.futures.Future[Any] | None = None
    polled_at: float = 0.0
    repoll_due: bool = False  # the next poll is scheduled (MIN_POLL_GAP_S)
    resident: str | None = None  # the resident actor's name, when it runs there
    order: dict[str, Any] | None = None  # what a resident actor is asked to start
    placement: dict[str, Any] = field(default_factory=dict)


def actor_name(*, job_id: str, attempt: int) -> str:
    """The attempt's submission id: unique per (job, attempt), refused by Ray if live."""
    return f"{job_id}/{attempt}"


def resident_name(*, host: str, gpu: int) -> str:
    """The long-lived inference actor of one GPU of one host."""
    return f"{RESIDENT_PREFIX}{host}/{gpu}"


class RayExecutor:
    name = "ray"

    def __init__(self, *, settings: Settings) -> None:
        assert settings.ray_address, "load_settings() refuses Ray mode without an address"
        self._settings = settings
        # Which GPUs: real ones on the nodes, or the simulated runtime's (work on the CPU).
        self.runtime: RuntimeName = "simulated" if settings.gpu_runtime == "simulated" else "real"
        self._ray: Any = None
        self._runner_class: Any = None
        self._resident_class: Any = None
        self._residents: dict[str, Any] = {}  # resident actor name -> handle
        self._resident_busy: dict[str, str] = {}  # resident actor name -> its job id
        self._sink: EventSink | None = None
        self._running: dict[str, _Running] = {}
        self._index: dict[tuple[str, int], int] = {}  # (host, GPU on that host) -> index
        self._nodes: list[dict[str, Any]] = []
        self._nodes_read_at = 0.0
        self._loads: dict[int, LaneLoad] = {}
        self._spares: SpareWorkers | None = None  # CARRIL_WARM_WORKERS (ADR 0052)
        self._poller: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False

    # ---- the connection ---------------------------------------------------------------

    def _connect(self) -> Any:
        if self._ray is not None:
            return self._ray
        address = self._settings.ray_address
        ray = driver_connect(address)
        self._ray = ray
        if self._settings.warm_workers:
            self._spares = SpareWorkers(job_id=ray.get_runtime_context().get_job_id())
        self._runner_class = ray.remote(AttemptRunner)
        self._resident_class = ray.remote(ResidentRunner)
        log.info("connected to the Ray cluster at %s", address)
        return ray

    # ---- inventory --------------------------------------------------------------------

    def _alive_nodes(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        if now - self._nodes_read_at > INVENTORY_TTL_S:
            ray = self._connect()
            nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("GPU")]
            self._nodes = sorted(nodes, key=lambda n: n.get("Labels", {}).get(HOST_LABEL, ""))
            self._nodes_read_at = now
            if self._spares is not None:
                self._spares.forget({n["NodeID"] for n in nodes})
                self._spares.keep(nodes)
        return self._nodes

    def inventory(self) -> list[GpuInfo]:
        gpus = []
        for node in self._alive_nodes():
            labels = node.get("Labels", {})
            host = labels.get(HOST_LABEL) or node.get("NodeManagerHostname", "?")
            total = int(labels.get(GPU_MIB_LABEL) or 0)
            for local in range(int(node["Resources"]["GPU"])):
                index = self._index.setdefault((host, local), len(self._index))
                load = self._loads.get(index)
                busy = load is not None and load.jobs > 0
                used = min(total, IDLE_USED_MIB + (load.reserved_mib if busy else 0))
                gpus.append(
                    GpuInfo(
                        index=index,
                        name=f"GPU {local} of {host}",
                        uuid=f"ray-{node['NodeID'][:12]}-{local}",
                        memory_total_mib=total,
                        memory_used_mib=used if busy else min(total, IDLE_USED_MIB),
                        memory_free_mib=total - (used if busy else min(total, IDLE_USED_MIB)),
                        utilization_pct=95.0 if busy else 0.0,
                        temperature_c=None,
                        power_w=None,
                        host=host,
                    )
                )
        return sorted(gpus, key=lambda gpu: gpu.index)

    def observe_lanes(self, *, loads: dict[int, LaneLoad]) -> None:
        self._loads = dict(loads)

    def _host_of(self, gpu_ids: list[int]) -> str:
        hosts = {host for (host, _), index in self._index.items() if index in gpu_ids}
        return hosts.pop() if len(hosts) == 1 else ""

    def _node_id_of(self, host: str) -> str | None:
        for node in self._alive_nodes():
            if node.get("Labels", {}).get(HOST_LABEL) == host:
                return node["NodeID"]
        return None

    # ---- lifecycle --------------------------------------------------------------------

    async def open(self, *, sink: EventSink) -> None:
        self._sink = sink
        self._loop = asyncio.get_running_loop()
        self._connect()
        self._poller = asyncio.create_task(self._poll_forever(), name="ray-executor-poll")

    def reattach(self, attempts: list[Attempt]) -> set[str]:
        """Find each attempt's actor by its name; the live ones are followed again."""
        self._connect()
        alive: set[str] = set()
        for attempt in attempts:
            host = self._host_of(attempt.gpu_ids)
            found = self._find(attempt, host=host)
            if found is None:
                log.warning(
                    "job %s: attempt %s not found on the cluster",
                    attempt.job_id,
                    attempt.attempt,
                )
                continue
            actor, resident, described = found
            # cursor -1: resume from the last message the previous service acknowledged.
            running = _Running(
                attempt=attempt,
                actor=actor,
                host=host,
                cursor=-1,
                started=True,
                placement=_placement(described, self, resident=resident),
                resident=resident,
                order=self._order(attempt),
            )
            if resident is not None:
                self._residents[resident] = actor
                self._resident_busy[resident] = attempt.job_id
            self._running[attempt.job_id] = running
            alive.add(attempt.job_id)
            log.info(
                "job %s: reattached attempt %s on %s",
                attempt.job_id,
                attempt.attempt,
                running.placement.get("host"),
            )
        claimed = {
            actor_name(job_id=a.job_id, attempt=a.attempt) for a in attempts if a.job_id in alive
        }
        self._stop_unclaimed(claimed=claimed)
        return alive

    def _find(self, attempt: Attempt, *, host: str) -> tuple[Any, str | None, dict] | None:
        """The attempt's live actor (its own, or the resident one running it), its
        resident name if any, and where it runs; None when it is gone."""
        ray = self._ray
        names: list[tuple[str, str | None]] = [
            (actor_name(job_id=attempt.job_id, attempt=attempt.attempt), None)
        ]
        if attempt.resident and len(attempt.gpu_ids) == 1:
            local = [loc for (h, loc), i in self._index.items() if i == attempt.gpu_ids[0]]
            if local:
                resident = resident_name(host=host, gpu=local[0])
                names.append((resident, resident))
        for name, resident in names:
            try:
                actor = ray.get_actor(name, namespace=NAMESPACE)
                if resident is None:
                    described = ray.get(actor.describe.remote(), timeout=POLL_TIMEOUT_S)
                else:
                    key = (attempt.job_id, attempt.attempt)
                    jobs = ray.get(actor.jobs.remote(), timeout=POLL_TIMEOUT_S)
                    if key not in [tuple(j) for j in jobs]:
                        continue
                    order = self._order(attempt)
                    described = ray.get(actor.start_job.remote(order), timeout=POLL_TIMEOUT_S)
            except Exception:  # noqa: S112 - gone, dead or unreachable: look further
                continue
            return actor, resident, described
        return None

    def _order(self, attempt: Attempt) -> dict[str, Any]:
        # A JobOrder's fields are a subset of the Attempt's, under the same names.
        return order_dict(JobOrder(**{f.name: getattr(attempt, f.name) for f in fields(JobOrder)}))

    def _stop_unclaimed(self, *, claimed: set[str]) -> None:
        """Kill every attempt actor the journal does not say is current: a stale attempt
        (the job moved on to a later one) or one of a job that has ended meanwhile."""
        ray = self._ray
        for entry in ray.util.list_named_actors(all_namespaces=True):
            name = entry["name"]
            if (
                entry["namespace"] != NAMESPACE
                or name in claimed
                or name.startswith(RESIDENT_PREFIX)
            ):
                continue
            with contextlib.suppress(Exception):
                ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
                log.warning("stopped attempt %s: the journal does not run it", name)

    def launch(self, attempt: Attempt) -> None:
        self._connect()
        host = self._host_of(attempt.gpu_ids)
        order = self._order(attempt)
        node_id = self._node_id_of(host)
        resident = self._resident_for(attempt, host=host, node_id=node_id)
        if resident is not None:
            name, actor = resident
            self._resident_busy[name] = attempt.job_id
            self._follow(
                _Running(attempt=attempt, actor=actor, host=host, resident=name, order=order)
            )
            log.info("job %s: attempt %s on resident %s", attempt.job_id, attempt.attempt, name)
            return
        options: dict[str, Any] = {
            "name": actor_name(job_id=attempt.job_id, attempt=attempt.attempt),
            "namespace": NAMESPACE,
            "lifetime": "detached",
            "max_restarts": 0,
            "max_task_retries": 0,
            "max_concurrency": ACTOR_THREADS,
            "num_cpus": 1,
            "num_gpus": self._gpus_asked(attempt),
        }
        if node_id is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            # Soft: admission's host when Ray can, anywhere that fits when it is gone.
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=True)
        actor = self._runner_class.options(**options).remote(
            order=order, boot=self._boot(gpu_ids=attempt.gpu_ids, env=self._attempt_env())
        )
        self._spare_replace(node_id)  # the actor takes the node's spare, if one is ready
        self._follow(_Running(attempt=attempt, actor=actor, host=host))
        log.info(
            "job %s: attempt %s submitted to Ray (%s)",
            attempt.job_id,
            attempt.attempt,
            options["name"],
        )

    def _follow(self, running: _Running) -> None:
        """Track a launched attempt and ask it to start now; its answer (the actor is up)
        is handled as soon as it comes, not at the next poll."""
        job_id = running.attempt.job_id
        self._running[job_id] = running
        running.start = self._call(running, "start").future()
        self._when_done(running.start, job_id, running)

    def _when_done(
        self, future: concurrent.futures.Future[Any], job_id: str, running: _Running
    ) -> None:
        """Handle an actor's answer as soon as it arrives (on the loop), not a tick later.
        The next question still waits for the tick: one poll per attempt per tick."""
        loop = self._loop
        if loop is not None:
            future.add_done_callback(
                lambda _: (
                    loop.is_closed() or loop.call_soon_threadsafe(self._poll_now, job_id, running)
                )
            )

    def _poll_now(self, job_id: str, running: _Running) -> None:
        if self._running.get(job_id) is running and not self._closing:
            try:
                self._poll_one(job_id, running)
            except Exception:
                log.exception("job %s: polling its attempt failed", job_id)

    def _boot(self, *, gpu_ids: list[int], env: dict[str, str], style: str = "fresh") -> dict:
        return boot_dict(
            WorkerBoot(
                style=style,
                gpu_ids=list(gpu_ids),
                env=env,
                storage=str(self._settings.storage),
                runtime=self.runtime,
                parent_pid=0,
                log_level=self._settings.log_level.upper(),
                nice=self._settings.worker_nice,
                threads=self._settings.worker_threads if self.runtime == "simulated" else 0,
            )
        )

    def _resident_for(
        self, attempt: Attempt, *, host: str, node_id: str | None
    ) -> tuple[str, Any] | None:
        """The resident actor of the attempt's GPU when the kind wants one and it is free:
        created once per GPU (pinned to its node and device), reused by later attempts so
        their models stay loaded. None: the attempt gets an actor of its own."""
        if not attempt.resident or len(attempt.gpu_ids) != 1 or node_id is None:
            return None
        local = next(loc for (h, loc), i in self._index.items() if i == attempt.gpu_ids[0])
        name = resident_name(host=host, gpu=local)
        if name in self._resident_busy:
            return None
        actor = self._residents.get(name)
        if actor is None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            env = self._attempt_env()
            if self.runtime == "real":
                env["CUDA_VISIBLE_DEVICES"] = str(local)  # its GPU, for its whole life
            # No Ray GPU or CPU: the resident lives between jobs; each inference holds
            # Carril's lane of this GPU while it runs, as on one machine.
            actor = self._resident_class.options(
                name=name,
                namespace=NAMESPACE,
                lifetime="detached",
                get_if_exists=True,
                max_restarts=0,
                max_concurrency=ACTOR_THREADS,
                num_cpus=0,
                num_gpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote(boot=self._boot(gpu_ids=[local], env=env, style="resident"))
            self._residents[name] = actor
            self._spare_replace(node_id)
        return name, actor

    def _spare_replace(self, node_id: str | None) -> None:
        if self._spares is None or node_id is None:
            return
        node = next((n for n in self._alive_nodes() if n["NodeID"] == node_id), None)
        if node is not None:
            self._spares.replace(node)

    def _gpus_asked(self, attempt: Attempt) -> float:
        gpus = len(attempt.gpu_ids) or 1
        if gpus == 1:
            capacity = self._settings.lane_capacities(
                gpu_count=max(self._index.values(), default=0) + 1
            )
            shared = capacity.get(attempt.gpu_ids[0], 1) if attempt.gpu_ids else 1
            if shared > 1:
                return 1.0 / shared
        return float(gpus)

    def _attempt_env(self) -> dict[str, str]:
        class _NoGpus:  # the environment's GPU part comes from Ray, or is hidden below
            def child_env(self, *, gpu_ids: list[int]) -> dict[str, str]:
                return {}

        env = worker_env(settings=self._settings, runtime=_NoGpus(), gpu_ids=[])  # type: ignore[arg-type]
        if self.runtime == "simulated":
            env["CUDA_VISIBLE_DEVICES"] = ""  # simulated work runs on the CPU
        return env

    def cancel(self, *, job_id: str, attempt: int) -> bool:
        running = self._running.get(job_id)
        if running is None or running.attempt.attempt != attempt:
            return False
        if running.cancel_deadline is None:
            running.cancel_deadline = time.monotonic() + self._settings.cancel_grace_s
            self._call(running, "cancel")
        return True

    async def close(self) -> None:
        """Stop following; the attempts keep running on the cluster (they are detached)
        and the next start of the service reattaches them."""
        self._closing = True
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller

    # ---- the poll loop ----------------------------------------------------------------

    async def _poll_forever(self) -> None:
        while not self._closing:
            await asyncio.sleep(POLL_INTERVAL_S)
            for job_id, running in list(self._running.items()):
                self._poll_now(job_id, running)

    def _poll_one(self, job_id: str, running: _Running) -> None:
        """One non-blocking turn: look at what came back, ask again. Never waits."""
        ray = self._ray
        cancel_due = (
            running.cancel_deadline is not None and time.monotonic() > running.cancel_deadline
        )
        if cancel_due:
            log.warning("job %s did not stop within the grace: killing its actor", job_id)
            self._end(job_id, running, state="cancelled", kill=True)
            return
        try:
            if not running.started:
                if running.start is None:
                    running.start = self._call(running, "start").future()
                if not running.start.done():
                    return  # waiting for Ray to place it (or for the actor to boot)
                described = running.start.result()
                running.started = True
                running.placement = _placement(described, self, resident=running.resident)
                self._emit(AttemptHeartbeat(job_id=job_id, attempt=running.attempt.attempt))
                self._emit(
                    MetricsReported(
                        job_id=job_id,
                        attempt=running.attempt.attempt,
                        fields={"placement": running.placement},
                    )
                )
            if running.poll is None:
                self._ask(job_id, running)
                return
            if not running.poll.done():
                return
            future, running.poll = running.poll, None
            answer = future.result()
        except ray.exceptions.ActorUnavailableError:
            running.poll = None
            return  # unreachable for now; Ray says "died" once it knows
        except ray.exceptions.RayActorError as exc:
            self._crashed(job_id, running, exc)
            return
        running.cursor = answer["seq"]
        self._deliver(job_id, running, answer)
        if self._running.get(job_id) is running:
            self._ask(job_id, running)  # the next long poll, at once

    def _ask(self, job_id: str, running: _Running) -> None:
        """Send the attempt's next long poll, no sooner than MIN_POLL_GAP_S after the last."""
        if running.repoll_due:
            return
        wait = running.polled_at + MIN_POLL_GAP_S - time.monotonic()
        if wait > 0 and self._loop is not None:
            running.repoll_due = True
            self._loop.call_later(wait, self._ask_later, job_id, running)
            return
        running.polled_at = time.monotonic()
        running.poll = self._call(running, "poll", running.cursor, LONG_POLL_S).future()
        self._when_done(running.poll, job_id, running)

    def _ask_later(self, job_id: str, running: _Running) -> None:
        running.repoll_due = False
        if self._running.get(job_id) is running and running.poll is None and not self._closing:
            self._ask(job_id, running)

    def _deliver(self, job_id: str, running: _Running, answer: dict[str, Any]) -> None:
        attempt = running.attempt.attempt
        if answer["job_id"] != job_id or answer["attempt"] != attempt:
            return  # not the attempt we launched: never reported
        final: dict[str, Any] | None = None
        for message in answer["messages"]:
            kind = message["t"]
            if kind == "progress":
                self._emit(
                    ProgressReported(job_id=job_id, attempt=attempt, progress=message["progress"])
                )
            elif kind == "epoch":
                self._emit(EpochReported(job_id=job_id, attempt=attempt, record=message["record"]))
            elif kind == "metrics":
                self._emit(
                    MetricsReported(job_id=job_id, attempt=attempt, fields=message["fields"])
                )
            elif kind in ("done", "error"):
                final = message
        now = time.monotonic()
        if now - running.last_heartbeat >= HEARTBEAT_INTERVAL_S:
            running.last_heartbeat = now
            self._emit(AttemptHeartbeat(job_id=job_id, attempt=attempt))
        if final is not None:
            cancelled = running.cancel_deadline is not None
            if final["t"] == "done":
                self._end(
                    job_id,
                    running,
                    state="cancelled" if cancelled else "succeeded",
                    result=final["result"],
                )
                return
            error = error_from_dict(final["error"])
            if cancelled or error.code == Cancelled.code:
                self._end(job_id, running, state="cancelled")
            else:
                self._end(job_id, running, state="failed", error=error)

    def _crashed(self, job_id: str, running: _Running, exc: Exception) -> None:
        if running.cancel_deadline is not None:
            self._end(job_id, running, state="cancelled", kill=True)
            return
        host = running.placement.get("host") or running.host
        self._nodes_read_at = 0.0  # Ray declares the actor dead after its node: ask afresh
        alive = {node["NodeID"] for node in self._alive_nodes()}
        node_id = running.placement.get("node_id") or self._node_id_of(host)
        details = {
            "host": host,
            "node_lost": bool(node_id) and node_id not in alive,
            "reason": type(exc).__name__,
            "detail": (str(exc).splitlines() or [""])[0][:300],
        }
        log.warning(
            "job %s: attempt %s lost its actor: %s", job_id, running.attempt.attempt, details
        )
        self._end(job_id, running, state="failed", error=WorkerCrashed(details=details), kill=True)

    def _end(
        self,
        job_id: str,
        running: _Running,
        *,
        state: str,
        result: dict[str, Any] | None = None,
        error: CarrilError | None = None,
        kill: bool = False,
    ) -> None:
        # The actor goes first: its resources are free before the lanes are released. A
        # resident actor stays (warm) unless it is lost or would not stop.
        with contextlib.suppress(Exception):
            if running.resident is None or kill:
                self._ray.kill(running.actor, no_restart=True)
            else:
                running.actor.forget_job.remote(job_id, running.attempt.attempt)
        if running.resident is not None:
            self._resident_busy.pop(running.resident, None)
            if kill:
                self._residents.pop(running.resident, None)
        if self._running.get(job_id) is running:
            del self._running[job_id]
        self._emit(
            AttemptEnded(
                job_id=job_id,
                attempt=running.attempt.attempt,
                state=state,
                result=result,
                error=error,
            )
        )  # type: ignore[arg-type]

    def _call(self, running: _Running, method: str, *args: Any) -> Any:
        """Ask the attempt's actor: its own, or the resident one it runs in."""
        if running.resident is None:
            return getattr(running.actor, method).remote(*args)
        attempt = running.attempt
        if method == "start":
            return running.actor.start_job.remote(running.order)
        return getattr(running.actor, f"{method}_job").remote(
            attempt.job_id, attempt.attempt, *args
        )

    def _emit(self, event: Any) -> None:
        if self._sink is not None:
            self._sink(event)


def _placement(
    described: dict[str, Any], executor: RayExecutor, *, resident: str | None = None
) -> dict[str, Any]:
    host = ""
    for node in executor._alive_nodes():
        if node["NodeID"] == described.get("node_id"):
            host = node.get("Labels", {}).get(HOST_LABEL, "")
    placement = {
        "host": host,
        "node_id": described.get("node_id", ""),
        "node_gpu_ids": described.get("node_gpu_ids", []),
        "pid": described.get("pid"),
    }
    if resident is not None:
        placement["resident"] = resident
    return placement
