"""End-to-end smoke test of a running Carril, through its public REST API only.

Signs in, uploads a tiny generated dataset, trains (one epoch unless `--epochs`), waits for
success, promotes the trained model (as an administrator), runs an inference with it and
checks the detections JSON. With `--restart-during-training COMMAND` it runs COMMAND (one
that restarts the GPU service) once the training reports its second epoch, and the
training must still succeed. Standard library only, so it runs from any Python 3.11 on
the host:

    CARRIL_DEMO_PASSWORD=... CARRIL_SMOKE_ADMIN_PASSWORD=... \\
        python3 deploy/smoke_test.py --base-url http://127.0.0.1:8000 --request-id smoke-1

Used by deploy/compose-smoke.sh (CI) against the Compose project on the simulated runtime;
works the same against `make run`.

With `--cluster` it checks a Carril whose GPU service runs its jobs on a Ray cluster
(deploy/compose-cluster-smoke.sh; `make run-cluster` too): every Ray node on the
addresses given, the GPUs of every host listed by the GPU service and by the web app, a
job of all of one host's GPUs placed whole on one host, optionally a training through the
web app, and, with `--stop-node`, a job whose host is stopped under it runs again on
another host as its next attempt:

    CARRIL_DEMO_PASSWORD=... CARRIL_GPU_SERVICE_TOKEN=... python3 deploy/smoke_test.py \
        --cluster --base-url http://127.0.0.1:8000 --gpu-url http://127.0.0.1:8001 \
        --hosts gpu-a,gpu-b --ray-nodes 'COMMAND' --stop-node 'COMMAND {host}'
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

TERMINAL_STATES = {"succeeded", "failed", "cancelled", "lost"}
IMAGE_SIZE = 64


class SmokeFailed(Exception):
    """The smoke test found Carril not working."""


@dataclass(frozen=True)
class Response:
    status: int
    body: Any


@dataclass(frozen=True)
class Client:
    base_url: str
    token: str | None = None
    request_id: str | None = None
    scheme: str = "Token"  # the web app's; the GPU service takes `Bearer`

    def call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        multipart: tuple[bytes, str] | None = None,
        expect: tuple[int, ...] = (200,),
    ) -> Any:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"{self.scheme} {self.token}"
        if self.request_id:
            headers["X-Request-ID"] = self.request_id
        data = None
        if json_body is not None:
            data = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        elif multipart is not None:
            data, headers["Content-Type"] = multipart
        request = urllib.request.Request(  # noqa: S310 - the URL is the operator's own
            self.base_url.rstrip("/") + path, data=data, headers=headers, method=method
        )
        response = _send(request)
        if response.status not in expect:
            raise SmokeFailed(
                f"{method} {path}: expected {expect}, got {response.status}: "
                f"{json.dumps(response.body)[:2000]}"
            )
        return response.body

    def with_request_id(self, request_id: str) -> Client:
        return Client(
            base_url=self.base_url, token=self.token, request_id=request_id, scheme=self.scheme
        )


def _send(request: urllib.request.Request) -> Response:
    try:
        with urllib.request.urlopen(request, timeout=60) as raw:  # noqa: S310
            return Response(raw.status, _decode(raw.read()))
    except urllib.error.HTTPError as error:
        return Response(error.code, _decode(error.read()))


def _decode(payload: bytes) -> Any:
    try:
        return json.loads(payload) if payload else None
    except ValueError:
        return payload.decode(errors="replace")[:2000]


def multipart_body(
    *, fields: dict[str, str], files: list[tuple[str, str, bytes]]
) -> tuple[bytes, str]:
    """A multipart/form-data body; `files` are (field, filename, content)."""
    boundary = uuid.uuid4().hex
    out = io.BytesIO()
    for name, value in fields.items():
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode())
        out.write(value.encode() + b"\r\n")
    for name, filename, content in files:
        out.write(
            f"--{boundary}\r\nContent-Disposition: form-data; "
            f'name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n".encode()
        )
        out.write(content + b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"


def png_with_box(*, seed: int) -> tuple[bytes, tuple[float, float, float, float]]:
    """A small RGB PNG: grey background, one bright box. Returns it and its YOLO label."""
    left, top = 8 + (seed * 7) % 24, 8 + (seed * 11) % 24
    width, height = 20 + seed % 8, 16 + seed % 10
    rows = []
    for y in range(IMAGE_SIZE):
        row = bytearray([0])  # PNG filter type "none"
        for x in range(IMAGE_SIZE):
            inside = left <= x < left + width and top <= y < top + height
            row += bytes((230, 40, 40) if inside else (90, 90, 90))
        rows.append(bytes(row))
    header = struct.pack(">IIBBBBB", IMAGE_SIZE, IMAGE_SIZE, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n"
    png += _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(b"".join(rows)))
    png += _chunk(b"IEND", b"")
    label = (
        (left + width / 2) / IMAGE_SIZE,
        (top + height / 2) / IMAGE_SIZE,
        width / IMAGE_SIZE,
        height / IMAGE_SIZE,
    )
    return png, label


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def dataset_zip(*, train: int = 8, val: int = 4) -> bytes:
    """A YOLO detection dataset with one class, two splits, one box per image."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data.yaml", "train: images/train\nval: images/val\nnc: 1\nnames: [box]\n")
        seed = 0
        for split, count in (("train", train), ("val", val)):
            for index in range(count):
                png, (cx, cy, w, h) = png_with_box(seed=seed)
                seed += 1
                archive.writestr(f"images/{split}/img{index:03d}.png", png)
                archive.writestr(
                    f"labels/{split}/img{index:03d}.txt", f"0 {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}\n"
                )
    return out.getvalue()


def sign_in(*, base_url: str, username: str, password: str) -> Client:
    body = Client(base_url=base_url).call(
        "POST", "/api/v1/auth/token/", json_body={"username": username, "password": password}
    )
    token = body.get("token") if isinstance(body, dict) else None
    if not token:
        raise SmokeFailed(f"sign-in as {username!r} returned no token: {body!r}")
    return Client(base_url=base_url, token=token)


@dataclass
class Interruption:
    """A command (a restart of the GPU service) run once a training is past its first epoch,
    so that it has a checkpoint to resume from."""

    command: list[str]
    done: bool = False

    def due(self, job: dict[str, Any]) -> bool:
        epoch = (job.get("progress") or {}).get("epoch") or 0
        return not self.done and job["state"] == "running" and epoch >= 2

    def run(self, job: dict[str, Any]) -> None:
        epoch = job["progress"]["epoch"]
        log(f"job {job['id']} at epoch {epoch}: running {shlex.join(self.command)}")
        subprocess.run(self.command, check=True)
        self.done = True


def wait_for_job(
    *, client: Client, job_id: Any, timeout_s: float, interruption: Interruption | None = None
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    last_state = None
    while True:
        job = client.call("GET", f"/api/v1/jobs/{job_id}/")
        if job["state"] != last_state:
            last_state = job["state"]
            log(f"job {job_id}: {last_state} {json.dumps(job.get('progress') or {})}")
        if interruption is not None and interruption.due(job):
            interruption.run(job)
        if job["state"] in TERMINAL_STATES:
            if interruption is not None and not interruption.done:
                raise SmokeFailed(
                    f"job {job_id} ended {job['state']} before its interruption was due "
                    "(at epoch 2): give it more epochs"
                )
            return job
        if time.monotonic() > deadline:
            raise SmokeFailed(f"job {job_id} still {job['state']} after {timeout_s:.0f} s")
        time.sleep(2)


def require_success(job: dict[str, Any]) -> None:
    if job["state"] != "succeeded":
        raise SmokeFailed(f"job {job['id']} ended {job['state']}: {json.dumps(job.get('error'))}")


def results_of(body: Any) -> list[dict[str, Any]]:
    """A list endpoint's items, paginated (`{"results": [...]}`) or not."""
    return body["results"] if isinstance(body, dict) and "results" in body else list(body)


def find_model_version(*, client: Client, fingerprint: str) -> dict[str, Any]:
    versions = results_of(client.call("GET", "/api/v1/models/?page_size=100"))
    for version in versions:
        if version.get("fingerprint") == fingerprint:
            return version
    raise SmokeFailed(f"no model version with fingerprint {fingerprint} among {len(versions)}")


def check_detections(body: Any) -> int:
    """The detections JSON has one entry per image, each with well-formed boxes."""
    images = body.get("images") if isinstance(body, dict) else body
    if not isinstance(images, list) or not images:
        raise SmokeFailed(f"detections JSON has no images: {json.dumps(body)[:500]}")
    boxes = 0
    for image in images:
        for detection in image["detections"]:
            if len(detection["box_xyxy"]) != 4 or not 0 <= detection["confidence"] <= 1:
                raise SmokeFailed(f"malformed detection: {detection!r}")
            boxes += 1
    return boxes


def log(message: str) -> None:
    print(f"smoke: {message}", flush=True)


def upload_dataset(*, client: Client, request_id: str) -> dict[str, Any]:
    """Uploads the generated dataset; returns it once validated."""
    dataset = client.call(
        "POST",
        "/api/v1/datasets/",
        multipart=multipart_body(
            fields={"name": f"smoke-{request_id}"},
            files=[("file", "smoke.zip", dataset_zip())],
        ),
        expect=(201, 202),
    )
    # Validated after the upload is received (ADR 0025): poll until it is ready.
    deadline = time.monotonic() + 120
    while dataset.get("state", "ready") == "validating":
        if time.monotonic() > deadline:
            raise SmokeFailed(f"dataset {dataset['id']} still validating after 120 s")
        time.sleep(0.5)
        dataset = client.call("GET", f"/api/v1/datasets/{dataset['id']}/", expect=(200,))
    if dataset.get("state", "ready") != "ready":
        raise SmokeFailed(f"dataset refused: {dataset.get('report')}")
    log(f"dataset {dataset['id']} uploaded: classes {dataset.get('classes')}")
    return dataset


def train(
    *,
    client: Client,
    dataset: dict[str, Any],
    epochs: int,
    timeout_s: float,
    interruption: Interruption | None = None,
) -> dict[str, Any]:
    """Trains on one GPU through the web app; returns the succeeded job."""
    accepted = client.call(
        "POST",
        "/api/v1/jobs/train/",
        json_body={
            "dataset": dataset["id"],
            "model": "yolov8n",
            "epochs": epochs,
            "imgsz": IMAGE_SIZE,
            "batch": 4,
            "seeds": [42],
            "gpus": 1,
        },
        expect=(201, 202),
    )
    training = wait_for_job(
        client=client, job_id=accepted["id"], timeout_s=timeout_s, interruption=interruption
    )
    require_success(training)
    return training


def run(
    *,
    base_url: str,
    user: str,
    admin: str,
    request_id: str,
    timeout_s: float,
    epochs: int = 1,
    interruption: Interruption | None = None,
) -> None:
    password = os.environ.get("CARRIL_DEMO_PASSWORD", "")
    admin_password = os.environ.get("CARRIL_SMOKE_ADMIN_PASSWORD", "")
    if not password or not admin_password:
        raise SmokeFailed("set CARRIL_DEMO_PASSWORD and CARRIL_SMOKE_ADMIN_PASSWORD")

    client = sign_in(base_url=base_url, username=user, password=password).with_request_id(
        request_id
    )
    log(f"signed in as {user}; request id {request_id}")
    dataset = upload_dataset(client=client, request_id=request_id)
    training = train(
        client=client,
        dataset=dataset,
        epochs=epochs,
        timeout_s=timeout_s,
        interruption=interruption,
    )
    fingerprint = training["result"]["weights"]["fingerprint"]
    log(f"training {training['id']} succeeded: weights {fingerprint[:12]}")

    administrator = sign_in(base_url=base_url, username=admin, password=admin_password)
    version = find_model_version(client=administrator, fingerprint=fingerprint)
    administrator.with_request_id(request_id).call(
        "POST",
        f"/api/v1/models/{version['id']}/stage/",
        json_body={"stage": "serving", "reason": f"compose smoke test {request_id}"},
        expect=(200, 201),
    )
    log(f"model version {version['id']} promoted to serving")

    images = [png_with_box(seed=100 + index)[0] for index in range(2)]
    accepted = client.call(
        "POST",
        "/api/v1/jobs/infer/",
        multipart=multipart_body(
            fields={"model_version": str(version["id"]), "conf": "0.001", "imgsz": str(IMAGE_SIZE)},
            files=[("images", f"probe{index}.png", image) for index, image in enumerate(images)],
        ),
        expect=(201, 202),
    )
    inference = wait_for_job(client=client, job_id=accepted["id"], timeout_s=timeout_s)
    require_success(inference)
    boxes = check_detections(client.call("GET", f"/api/v1/jobs/{inference['id']}/detections/"))
    log(f"inference {inference['id']} succeeded: {len(images)} images, {boxes} boxes")


# ---- --cluster: the GPU service on a Ray cluster -------------------------------------


def poll(what: str, check: Any, *, timeout_s: float, every_s: float = 1.0) -> Any:
    """Calls `check` until it returns something true; returns that."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise SmokeFailed(f"no {what} after {timeout_s:.0f} s")
        time.sleep(every_s)


def hosts_of(gpus: list[dict[str, Any]]) -> dict[str, int]:
    """GPUs per host."""
    counts: dict[str, int] = {}
    for gpu in gpus:
        counts[str(gpu.get("host"))] = counts.get(str(gpu.get("host")), 0) + 1
    return counts


def check_ray_nodes(nodes: list[dict[str, Any]], *, hosts: dict[str, int], address: str) -> None:
    """What `python -m gpu_service.cluster nodes` printed: every node (the head's too) on
    `address`, one node per GPU host with its GPUs."""
    elsewhere = [n for n in nodes if n["address"] != address]
    if elsewhere:
        raise SmokeFailed(f"Ray nodes not on {address}: {elsewhere}")
    gpu_nodes = {n["host"]: n["gpus"] for n in nodes if n["gpus"]}
    if gpu_nodes != hosts:
        raise SmokeFailed(f"Ray's GPU nodes are {gpu_nodes}, expected {hosts}")


def submit_diagnostic(gpu: Client, **body: Any) -> dict[str, Any]:
    seconds = body.pop("seconds")
    return gpu.call(
        "POST",
        "/v1/jobs",
        json_body={"kind": "diagnostic", "spec": {"seconds": seconds, "step_s": 0.5}, **body},
        expect=(202,),
    )


def gpu_job(gpu: Client, job_id: str) -> dict[str, Any]:
    return gpu.call("GET", f"/v1/jobs/{job_id}")


def placement_of(gpu: Client, job_id: str, *, timeout_s: float) -> dict[str, Any]:
    """Where Ray placed the job's current attempt, once its actor has started."""
    return poll(
        f"placement of job {job_id}",
        lambda: gpu_job(gpu, job_id)["metrics"].get("placement"),
        timeout_s=timeout_s,
        every_s=0.5,
    )


def gpu_job_done(gpu: Client, job_id: str, *, timeout_s: float) -> dict[str, Any]:
    return poll(
        f"end of job {job_id}",
        lambda: (job := gpu_job(gpu, job_id))["state"] in TERMINAL_STATES and job,
        timeout_s=timeout_s,
    )


def run_cluster(
    *,
    base_url: str,
    gpu_url: str,
    user: str,
    request_id: str,
    hosts: dict[str, int],
    node_address: str,
    ray_nodes: list[str] | None,
    stop_node: list[str] | None,
    timeout_s: float,
    train_epochs: int = 0,
) -> None:
    password = os.environ.get("CARRIL_DEMO_PASSWORD", "")
    token = os.environ.get("CARRIL_GPU_SERVICE_TOKEN", "")
    if not password or not token:
        raise SmokeFailed("set CARRIL_DEMO_PASSWORD and CARRIL_GPU_SERVICE_TOKEN")
    gpu = Client(base_url=gpu_url, token=token, request_id=request_id, scheme="Bearer")

    # Nodes join the head in their own time: the GPU service lists a host's GPUs as soon
    # as Ray knows the node (its scheduler asks every tick).
    listed = poll(
        f"GPUs of {hosts}",
        lambda: (g := gpu.call("GET", "/v1/gpus")["gpus"]) and hosts_of(g) == hosts and g,
        timeout_s=timeout_s,
    )
    log(f"GPU service: {len(listed)} GPUs on {hosts_of(listed)}")
    if ray_nodes:
        done = subprocess.run(ray_nodes, check=False, capture_output=True, text=True)
        if done.returncode != 0:
            raise SmokeFailed(f"{shlex.join(ray_nodes)} failed: {done.stderr[-2000:]}")
        nodes = json.loads(done.stdout.strip().splitlines()[-1])
        check_ray_nodes(nodes, hosts=hosts, address=node_address)
        log(f"Ray: {len(nodes)} nodes, all on {node_address}: {[n['host'] for n in nodes]}")

    client = sign_in(base_url=base_url, username=user, password=password).with_request_id(
        request_id
    )
    seen = poll(
        "GPUs in the web app",
        lambda: (g := client.call("GET", "/api/v1/gpus/")["gpus"]) and hosts_of(g) == hosts and g,
        timeout_s=timeout_s,
    )
    log(f"web app: {len(seen)} GPUs on {hosts_of(seen)} (the reconciler's picture)")

    # A job of as many GPUs as one host has lands whole on one host.
    per_host = max(hosts.values())
    job = submit_diagnostic(gpu, seconds=2, gpus=per_host)
    placement = placement_of(gpu, job["id"], timeout_s=timeout_s)
    if placement["host"] not in hosts or sorted(placement["node_gpu_ids"]) != list(range(per_host)):
        raise SmokeFailed(f"{per_host}-GPU job {job['id']} placed on {placement}")
    done = gpu_job_done(gpu, job["id"], timeout_s=timeout_s)
    require_success(done)
    log(f"{per_host}-GPU job {job['id']} ran whole on {placement['host']} and succeeded")

    if train_epochs:
        dataset = upload_dataset(client=client, request_id=request_id)
        training = train(client=client, dataset=dataset, epochs=train_epochs, timeout_s=timeout_s)
        # The web app's job id is the GPU service's: where Ray ran it.
        ran_on = (gpu_job(gpu, training["id"])["metrics"].get("placement") or {}).get("host")
        if ran_on not in hosts:
            raise SmokeFailed(f"training {training['id']} ran on {ran_on!r}, not a GPU host")
        # Written by the node's container, read by the web container: one storage.
        lines = client.call("GET", f"/api/v1/jobs/{training['id']}/logs/")["lines"]
        if not lines:
            raise SmokeFailed(f"the web app finds no log of training {training['id']}")
        log(
            f"training {training['id']} through the web app ran on {ran_on} and succeeded; "
            f"the web app reads its log ({len(lines)} lines) from the shared storage"
        )

    if stop_node:
        job_stopped_node(gpu, hosts=hosts, stop_node=stop_node, timeout_s=timeout_s)


def job_stopped_node(
    gpu: Client, *, hosts: dict[str, int], stop_node: list[str], timeout_s: float
) -> None:
    """A job whose host is stopped under it (`stop_node`, {host} replaced) ends there with
    WORKER_CRASHED and runs again whole on another host as its next attempt (a diagnostic
    cannot resume; a training would resume from its checkpoint). The stopped host's GPUs
    are listed no more. Stopping drains the node first (up to 30 s): the job outlasts it."""
    seconds = 40
    job = submit_diagnostic(gpu, seconds=seconds, gpus=1)
    first = placement_of(gpu, job["id"], timeout_s=timeout_s)
    poll(
        f"progress of job {job['id']}",
        lambda: (gpu_job(gpu, job["id"])["progress"].get("batch") or 0) >= 2,
        timeout_s=timeout_s,
        every_s=0.5,
    )
    command = [word.replace("{host}", first["host"]) for word in stop_node]
    log(f"job {job['id']} running on {first['host']}: {shlex.join(command)}")
    started = time.monotonic()
    subprocess.run(command, check=True)
    log(f"{first['host']} stopped in {time.monotonic() - started:.0f} s")
    done = gpu_job_done(gpu, job["id"], timeout_s=timeout_s + seconds)
    require_success(done)
    others = set(hosts) - {first["host"]}
    final = done["metrics"]["placement"]
    if done["attempt"] != 2 or final["host"] not in others:
        raise SmokeFailed(
            f"job {job['id']}: attempt {done['attempt']} on {final['host']}, expected "
            f"attempt 2 on one of {sorted(others)}"
        )
    if done["result"]["steps_done"] != round(seconds / 0.5):
        raise SmokeFailed(f"job {job['id']} ran {done['result']['steps_done']} steps, not all")
    log(
        f"job {job['id']} ran again on {final['host']} as attempt 2 and succeeded "
        f"({time.monotonic() - started:.0f} s after the stop began)"
    )
    left = hosts_of(gpu.call("GET", "/v1/gpus")["gpus"])
    if set(left) != others:
        raise SmokeFailed(f"after {first['host']} stopped the GPU service lists {left}")
    log(f"GPU service now lists {left}")


# What a run that finds Carril not working raises: its own verdict, an answer not shaped as
# expected (a missing key, an unreadable JSON line), no answer, a command that failed.
FAILURES = (
    SmokeFailed,
    KeyError,
    TypeError,
    ValueError,
    urllib.error.URLError,
    subprocess.CalledProcessError,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--user", default="demo")
    parser.add_argument("--admin", default="smoke-admin")
    parser.add_argument("--request-id", default=f"smoke-{uuid.uuid4().hex[:12]}")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per job")
    parser.add_argument("--epochs", type=int, default=1, help="of the training")
    parser.add_argument(
        "--restart-during-training",
        metavar="COMMAND",
        help="a command (shell words) run once the training is past epoch 1, e.g. one "
        "that restarts the GPU service; the training must still succeed",
    )
    cluster = parser.add_argument_group("--cluster: the GPU service on a Ray cluster")
    cluster.add_argument("--cluster", action="store_true", help="check the cluster instead")
    cluster.add_argument("--gpu-url", default="http://127.0.0.1:8001")
    cluster.add_argument("--hosts", default="gpu-a,gpu-b", help="the GPU hosts, comma-separated")
    cluster.add_argument("--gpus-per-host", type=int, default=2)
    cluster.add_argument(
        "--node-address", default="127.0.0.1", help="the address every Ray node must have"
    )
    cluster.add_argument(
        "--ray-nodes",
        metavar="COMMAND",
        help="a command (shell words) printing `python -m gpu_service.cluster nodes`",
    )
    cluster.add_argument(
        "--stop-node",
        metavar="COMMAND",
        help="a command (shell words; {host} is replaced) that stops one host's Ray node",
    )
    cluster.add_argument(
        "--train-epochs", type=int, default=0, help="also train through the web app"
    )
    args = parser.parse_args()
    if args.cluster:
        return _main_cluster(args)
    interruption = (
        Interruption(shlex.split(args.restart_during_training))
        if args.restart_during_training
        else None
    )
    try:
        run(
            base_url=args.base_url,
            user=args.user,
            admin=args.admin,
            request_id=args.request_id,
            timeout_s=args.timeout,
            epochs=args.epochs,
            interruption=interruption,
        )
    except FAILURES as error:
        print(f"smoke test FAILED: {error!r}", file=sys.stderr)
        return 1
    log("passed")
    return 0


def _main_cluster(args: argparse.Namespace) -> int:
    try:
        run_cluster(
            base_url=args.base_url,
            gpu_url=args.gpu_url,
            user=args.user,
            request_id=args.request_id,
            hosts={host: args.gpus_per_host for host in args.hosts.split(",")},
            node_address=args.node_address,
            ray_nodes=shlex.split(args.ray_nodes) if args.ray_nodes else None,
            stop_node=shlex.split(args.stop_node) if args.stop_node else None,
            timeout_s=args.timeout,
            train_epochs=args.train_epochs,
        )
    except FAILURES as error:
        print(f"cluster smoke test FAILED: {error!r}", file=sys.stderr)
        return 1
    log("cluster: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
