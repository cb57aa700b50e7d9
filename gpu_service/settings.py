"""The GPU service's configuration, read from `CARRIL_*` environment variables.

Built once at start-up by `load_settings()` (never at import time), so tests and the
worker processes can build their own.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from gpu_service.errors import ValidationFailed
from gpu_service.storage import storage_make_private

log = logging.getLogger(__name__)

# Values that look like a token but are only placeholders from examples and templates.
PLACEHOLDER_TOKENS = frozenset({"", "changethis", "change-me", "changeme", "secret", "token"})


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CARRIL_", extra="ignore")

    storage: Path = Path("./var")
    env: Literal["dev", "production"] = "dev"
    gpu_host: str = "127.0.0.1"
    gpu_port: int = Field(8001, ge=1, le=65535)
    gpu_service_token: SecretStr | None = None
    gpu_runtime: Literal["auto", "real", "simulated"] = "auto"
    simulated_gpus: str = "2x24GiB"
    # "1" for every lane, or per GPU: "0:2,1:1" (GPUs not named keep capacity 1).
    lane_capacity: str = "1"
    starvation_bound_s: float = Field(300.0, ge=0)
    cancel_grace_s: float = Field(10.0, ge=0)
    max_attempts: int = Field(3, ge=1)
    journal_retention_days: float = Field(30.0, gt=0)
    # Declared power per GPU for the energy of jobs where none is measured (issue 16).
    modelled_gpu_watts: float = Field(300.0, ge=0)
    infer_cache_size: int = Field(2, ge=1)
    # The most pixels one inference image may have, and the most one inference batch
    # decodes at once (decode bombs: a small PNG can declare 13,000 x 13,000 pixels).
    infer_max_pixels: int = Field(40_000_000, ge=1)
    # Workers run at this niceness (0-19) so the API is scheduled before their compute.
    worker_nice: int = Field(10, ge=0, le=19)
    # torch threads per worker under the simulated runtime (0: torch's default).
    worker_threads: int = Field(0, ge=0)
    # Where attempts run: "local" (spawned worker processes on this machine) or "ray"
    # (actors on the Ray cluster at ray_address, host:port of its head). ADR 0017.
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    # CPU scheduling policy of workers (and the data loaders they start): Linux's
    # SCHED_OTHER (with the niceness above), SCHED_BATCH or SCHED_IDLE.
    worker_sched: Literal["other", "batch", "idle"] = "other"
    # I/O class of workers (checkpoint writes): "idle" only uses the disk when nothing else does.
    worker_ioprio: Literal["best-effort", "idle"] = "best-effort"
    # Keep a spare worker per GPU set, imports done, for the next fresh job (issue 18).
    warm_workers: bool = True
    log_level: str = "INFO"
    log_format: Literal["text", "json"] = "text"

    @property
    def token(self) -> str:
        assert self.gpu_service_token is not None, "load_settings() resolves the token"
        return self.gpu_service_token.get_secret_value()

    @property
    def journal_path(self) -> Path:
        return self.storage / "journal.sqlite3"

    def job_dir(self, job_id: str) -> Path:
        return self.storage / "jobs" / job_id

    def lane_capacities(self, *, gpu_count: int) -> dict[int, int]:
        return parse_lane_capacity(self.lane_capacity, gpu_count=gpu_count)


def load_settings(**overrides: object) -> Settings:
    """Read the environment, resolve storage to an absolute path and settle the token.

    Outside dev mode a missing or placeholder token refuses to start: a guessable token
    would hand the GPUs to anyone who can reach the port.
    """
    settings = Settings(**overrides)  # type: ignore[arg-type]
    if settings.executor == "ray" and not settings.ray_address:
        raise ValidationFailed(
            "CARRIL_EXECUTOR=ray needs CARRIL_RAY_ADDRESS, the host:port of the Ray head"
        )
    # Every GPU-service process reads its settings first: owner-only files from here on.
    storage = storage_make_private(settings.storage.expanduser().resolve())
    token = settings.gpu_service_token.get_secret_value() if settings.gpu_service_token else ""
    if token.strip().lower() in PLACEHOLDER_TOKENS:
        if settings.env == "production":
            raise ValidationFailed(
                "CARRIL_GPU_SERVICE_TOKEN must be set to a real secret when CARRIL_ENV=production"
            )
        token = dev_token(storage=storage)
    return settings.model_copy(update={"storage": storage, "gpu_service_token": SecretStr(token)})


def dev_token(*, storage: Path) -> str:
    """The dev-mode token, generated once into storage so every starter agrees on it.

    O_EXCL makes the first writer win when the web app and the GPU service start at the
    same moment; the loser reads what the winner wrote.
    """
    path = storage / "secrets" / "gpu_service_token"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):
            token = path.read_text().strip()
            if token:
                return token
            # The winner created the file but has not written it yet.
            time.sleep(0.02)
        raise ValidationFailed(f"{path} exists but is empty") from None
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    log.warning("dev mode: generated a GPU service token into %s", path)
    return token


def parse_lane_capacity(raw: str, *, gpu_count: int) -> dict[int, int]:
    raw = raw.strip()
    try:
        if ":" not in raw:
            value = int(raw or "1")
            return dict.fromkeys(range(gpu_count), value)
        capacities = dict.fromkeys(range(gpu_count), 1)
        for part in raw.split(","):
            gpu, _, value = part.partition(":")
            if int(gpu) in capacities:
                capacities[int(gpu)] = int(value)
    except ValueError:
        raise ValidationFailed(
            f"CARRIL_LANE_CAPACITY must look like '1' or '0:2,1:1', not {raw!r}"
        ) from None
    if any(value < 0 for value in capacities.values()):
        raise ValidationFailed("CARRIL_LANE_CAPACITY must not be negative")
    return capacities
