"""A typed client for Carril's REST API (`/api/v1/`), on httpx.

    from carril_client import Client
    with Client("http://127.0.0.1:8000", token="...") as carril:
        dataset = carril.dataset_upload("shapes.zip", name="shapes")   # waits until ready
        job = carril.train(dataset=dataset["id"], model="yolov8n", epochs=5)
        job = carril.job_wait(job["id"])                                 # backs off
        print(job["registered_model_version"], job["metrics"])

Errors come as the typed exceptions of `carril_client.errors`, each with the server's
`code`; a job that ends badly while waited for raises `JobFailed`.
"""

from __future__ import annotations

import contextlib
import mimetypes
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypedDict

import httpx

from carril_client.errors import (
    DatasetInvalid,
    JobFailed,
    Unreachable,
    error_from_response,
)
from carril_client.polling import poll
from carril_client.uploads import Progress, ProgressFile

API = "/api/v1"
TERMINAL_JOB_STATES = frozenset({"succeeded", "failed", "cancelled", "lost"})
FAILED_JOB_STATES = frozenset({"failed", "cancelled", "lost"})
Document = dict[str, Any]


class Page(TypedDict):
    count: int
    next: str | None
    previous: str | None
    results: list[Document]


class Client:
    """One server, one token. Use as a context manager or call `close()`."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        headers = {"Accept": "application/json", "User-Agent": "carril-client"}
        if token:
            headers["Authorization"] = f"Token {token}"
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout_s, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- transport ------------------------------------------------------------------------
    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        url = path if path.startswith(("http://", "https://", "/api/")) else f"{API}{path}"
        try:
            response = self._http.request(method, url, **kwargs)
        except httpx.TransportError as exc:
            raise Unreachable(f"{self.url} did not answer: {exc}", code="UNREACHABLE") from exc
        if response.status_code >= 400:
            raise error_from_response(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._send(method, path, **kwargs)
        return response.json() if response.content else None

    def _all(self, path: str, params: dict[str, Any] | None = None) -> list[Document]:
        """Every item of a paginated list, page after page."""
        items: list[Document] = []
        url: str | None = path
        query: dict[str, Any] | None = {k: v for k, v in (params or {}).items() if v is not None}
        query["page_size"] = 200
        while url:
            page = self._json("GET", url, params=query)
            items.extend(page["results"])
            # `next` carries the whole query; params given again would replace it.
            url, query = page.get("next"), None
        return items

    # --- tokens ---------------------------------------------------------------------------
    def token_obtain(self, *, username: str, password: str, name: str = "carril-cli") -> Document:
        """Exchange a password for a new token: `{token, id, prefix}` (the token shown once)."""
        return self._json(
            "POST", "/auth/token/", json={"username": username, "password": password, "name": name}
        )

    def tokens_list(self) -> list[Document]:
        return self._json("GET", "/auth/tokens/")

    def token_create(
        self, *, name: str = "", scopes: Sequence[str] | None = None, user: str | None = None
    ) -> Document:
        """A new token for yourself; with `scopes` (and, for an administrator, `user`), a
        token limited to those scopes, such as a CI token."""
        body: Document = {"name": name}
        if scopes is not None:
            body["scopes"] = list(scopes)
        if user is not None:
            body["user"] = user
        return self._json("POST", "/auth/tokens/", json=body)

    def token_revoke(self, token_id: int) -> None:
        self._send("DELETE", f"/auth/tokens/{token_id}/")

    # --- datasets -------------------------------------------------------------------------
    def datasets_list(self) -> list[Document]:
        return self._all("/datasets/")

    def dataset_get(self, dataset_id: str) -> Document:
        return self._json("GET", f"/datasets/{dataset_id}/")

    def dataset_delete(self, dataset_id: str) -> None:
        self._send("DELETE", f"/datasets/{dataset_id}/")

    def dataset_upload(
        self,
        path: str | Path,
        *,
        name: str,
        progress: Progress | None = None,
        wait: bool = True,
        timeout_s: float | None = 1800,
        on_update: Callable[[Document], None] | None = None,
    ) -> Document:
        """Upload a dataset zip, streamed from disk; with `wait`, poll until it is `ready`.

        Raises `DatasetInvalid` (its `details["report"]` lists problems by file and line)
        whether the server refuses at once or after validating in the background.
        """
        path = Path(path)
        with ProgressFile(path, progress) as body:
            dataset = self._json(
                "POST",
                "/datasets/",
                data={"name": name},
                files={"file": (path.name, body, "application/zip")},
                timeout=httpx.Timeout(60.0, write=None, read=600.0),
            )
        if not wait:
            return dataset
        dataset = poll(
            lambda: self.dataset_get(dataset["id"]),
            lambda d: d.get("state", "ready") != "validating",
            timeout_s=timeout_s,
            on_update=on_update,
            first_s=0.3,
            max_s=3.0,
        )
        if dataset.get("state") == "invalid":
            raise DatasetInvalid(
                "The dataset is not a valid YOLO detection dataset; see the report.",
                code="DATASET_INVALID",
                details={"report": dataset.get("report") or {}, "dataset": dataset["id"]},
            )
        return dataset

    # --- jobs -----------------------------------------------------------------------------
    def jobs_list(
        self,
        *,
        state: str | None = None,
        kind: str | None = None,
        tag: str | None = None,
        dataset: str | None = None,
        sort: str | None = None,
    ) -> list[Document]:
        """Every job you may see, newest first, or with `sort` by the best seed's final
        metric (`-mAP50-95` highest first; jobs without it come last)."""
        return self._all(
            "/jobs/", {"state": state, "kind": kind, "tag": tag, "dataset": dataset, "sort": sort}
        )

    def job_get(self, job_id: str) -> Document:
        return self._json("GET", f"/jobs/{job_id}/")

    def job_label(
        self,
        job_id: str,
        *,
        name: str | None = None,
        tags: Sequence[str] | None = None,
        note: str | None = None,
    ) -> Document:
        """Change a job's name, tags or note (its owner only); only those given are sent,
        so `tags=[]` clears the tags and `name=""` the name. Answers the job's document."""
        tags = list(tags) if tags is not None else None
        body = _present({"name": name, "tags": tags, "note": note})
        return self._json("PATCH", f"/jobs/{job_id}/", json=body)

    def jobs_compare(self, job_ids: Sequence[str]) -> Document:
        """Two to ten trainings side by side: `{base, runs, final_metrics, per_class}`,
        each metric's values in the order given with differences from the first."""
        return self._json("GET", "/jobs/compare/", params={"ids": ",".join(job_ids)})

    def train(
        self,
        *,
        dataset: str,
        model: str,
        epochs: int | None = None,
        imgsz: int | None = None,
        batch: int | None = None,
        seeds: Sequence[int] | None = None,
        gpus: int | None = None,
        lr0: float | None = None,
        patience: int | None = None,
        optimizer: str | None = None,
        mosaic: float | None = None,
        fliplr: float | None = None,
        hsv_h: float | None = None,
        hsv_s: float | None = None,
        hsv_v: float | None = None,
        scale: float | None = None,
        degrees: float | None = None,
        name: str | None = None,
        tags: Sequence[str] | None = None,
        note: str | None = None,
    ) -> Document:
        """Start a training: `{id, state, url}` (202). What is not given is not sent, so
        the server's defaults apply (README, "Training and inference settings")."""
        body = {
            "dataset": dataset,
            "model": model,
            "epochs": epochs,
            "imgsz": imgsz,
            "batch": batch,
            "seeds": list(seeds) if seeds is not None else None,
            "gpus": gpus,
            "lr0": lr0,
            "patience": patience,
            "optimizer": optimizer,
            "mosaic": mosaic,
            "fliplr": fliplr,
            "hsv_h": hsv_h,
            "hsv_s": hsv_s,
            "hsv_v": hsv_v,
            "scale": scale,
            "degrees": degrees,
            "name": name,
            "tags": list(tags) if tags is not None else None,
            "note": note,
        }
        return self._json("POST", "/jobs/train/", json=_present(body))

    def infer(
        self,
        images: Sequence[str | Path],
        *,
        model_version: str | None = None,
        conf: float | None = None,
        iou: float | None = None,
        imgsz: int | None = None,
    ) -> Document:
        """Start an inference on image files (sent from disk), on `model_version` or the
        serving one: `{id, state, url}` (202)."""
        with contextlib.ExitStack() as stack:
            files = []
            for image in images:
                image = Path(image)
                kind = mimetypes.guess_type(image.name)[0] or "application/octet-stream"
                files.append(("images", (image.name, stack.enter_context(open(image, "rb")), kind)))
            data = _present({"model_version": model_version, "conf": conf, "iou": iou})
            if imgsz is not None:
                data["imgsz"] = imgsz
            return self._json(
                "POST",
                "/jobs/infer/",
                data={k: str(v) for k, v in data.items()},
                files=files,
                timeout=httpx.Timeout(60.0, write=None, read=600.0),
            )

    def evaluate(
        self,
        *,
        model_version: str,
        dataset: str,
        split: str | None = None,
        imgsz: int | None = None,
        conf: float | None = None,
        iou: float | None = None,
    ) -> Document:
        """Start an evaluate job (issue 13's `POST /api/v1/jobs/evaluate/`)."""
        body = {
            "model_version": model_version,
            "dataset": dataset,
            "split": split,
            "imgsz": imgsz,
            "conf": conf,
            "iou": iou,
        }
        return self._json("POST", "/jobs/evaluate/", json=_present(body))

    def job_evaluation(self, job_id: str) -> Document:
        return self._json("GET", f"/jobs/{job_id}/evaluation/")

    def job_cancel(self, job_id: str) -> Document:
        return self._json("POST", f"/jobs/{job_id}/cancel/")

    def job_logs(self, job_id: str, *, tail: int = 200) -> list[str]:
        return self._json("GET", f"/jobs/{job_id}/logs/", params={"tail": tail})["lines"]

    def job_detections(self, job_id: str) -> Document:
        return self._json("GET", f"/jobs/{job_id}/detections/")

    def job_wait(
        self,
        job_id: str,
        *,
        timeout_s: float | None = None,
        on_update: Callable[[Document], None] | None = None,
        raise_on_failure: bool = True,
        max_interval_s: float = 5.0,
    ) -> Document:
        """Poll a job, backing off up to `max_interval_s`, until it ends. Raises
        `JobFailed` when it ends failed, cancelled or lost (unless told not to)."""
        job = poll(
            lambda: self.job_get(job_id),
            lambda j: j["state"] in TERMINAL_JOB_STATES,
            timeout_s=timeout_s,
            on_update=on_update,
            max_s=max_interval_s,
        )
        if raise_on_failure and job["state"] in FAILED_JOB_STATES:
            raise JobFailed(job)
        return job

    # --- files ----------------------------------------------------------------------------
    def download(self, url: str, dest: str | Path, *, progress: Progress | None = None) -> Path:
        """Stream a file the API serves (an artifact, an annotated image, weights) to `dest`."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = dest.with_name(dest.name + ".part")
        with self._stream("GET", url) as response:
            total = int(response.headers.get("Content-Length") or 0)
            done = 0
            with open(partial, "wb") as out:
                for chunk in response.iter_bytes(1 << 16):
                    out.write(chunk)
                    done += len(chunk)
                    if progress is not None:
                        progress(done, total)
        partial.replace(dest)
        return dest

    @contextlib.contextmanager
    def _stream(self, method: str, path: str) -> Iterator[httpx.Response]:
        url = path if path.startswith(("http://", "https://", "/api/")) else f"{API}{path}"
        try:
            with self._http.stream(method, url) as response:
                if response.status_code >= 400:
                    response.read()
                    raise error_from_response(response)
                yield response
        except httpx.TransportError as exc:
            raise Unreachable(f"{self.url} did not answer: {exc}", code="UNREACHABLE") from exc

    # --- models ---------------------------------------------------------------------------
    def models_list(self, *, stage: str | None = None) -> list[Document]:
        return self._all("/models/", {"stage": stage})

    def model_get(self, version_id: str) -> Document:
        return self._json("GET", f"/models/{version_id}/")

    def model_serving(self) -> Document | None:
        serving = self.models_list(stage="serving")
        return serving[0] if serving else None

    def model_stage(
        self,
        version_id: str,
        *,
        stage: str,
        reason: str,
        require: Document | None = None,
    ) -> Document:
        """Move a version to `stage`. With `require` ({metric, over: "serving",
        min_improvement, dataset}) the server checks the gate in the same transaction and
        answers `GateFailed` (409) with both numbers when it does not hold."""
        body: Document = {"stage": stage, "reason": reason}
        if require is not None:
            body["require"] = require
        return self._json("POST", f"/models/{version_id}/stage/", json=body)

    def model_import(self, path: str | Path, *, name: str, progress: Progress | None = None):
        path = Path(path)
        with ProgressFile(path, progress) as body:
            return self._json(
                "POST",
                "/models/import/",
                data={"name": name},
                files={"file": (path.name, body, "application/octet-stream")},
                timeout=httpx.Timeout(60.0, write=None, read=600.0),
            )

    def model_export(self, version_id: str, *, format: str, **options: Any) -> Document:
        """Start an export job (issue 14's `POST /api/v1/models/{id}/export/`)."""
        return self._json(
            "POST", f"/models/{version_id}/export/", json={"format": format, **_present(options)}
        )

    def model_exports(self, version_id: str) -> list[Document]:
        return self._json("GET", f"/models/{version_id}/exports/")

    def model_download(
        self,
        version_id: str,
        dest: str | Path,
        *,
        format: str = "pt",
        progress: Progress | None = None,
    ) -> Path:
        """Stream a version's weights or an export (issue 14's download endpoint)."""
        return self.download(
            f"{API}/models/{version_id}/download/?format={format}", dest, progress=progress
        )

    # --- GPUs -----------------------------------------------------------------------------
    def gpus(self) -> Document:
        return self._json("GET", "/gpus/")

    # --- webhooks -------------------------------------------------------------------------
    def webhooks_list(self) -> list[Document]:
        return self._json("GET", "/webhooks/")


def _present(values: dict[str, Any]) -> dict[str, Any]:
    """Only the values given, so the server's defaults apply to the rest."""
    return {k: v for k, v in values.items() if v is not None}
