"""Small typed readers for the environment; every knob the web app has is `CARRIL_*`."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, *, default: str) -> str:
    return os.environ.get(name, default)


def env_int(name: str, *, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_float(name: str, *, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from exc


def env_list(name: str, *, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def storage_root() -> Path:
    """CARRIL_STORAGE resolved to an absolute path: both services must agree on it."""
    return Path(os.environ.get("CARRIL_STORAGE", "./var")).expanduser().resolve()


# Values from examples and templates (.env.example says `changethis`): never a secret.
PLACEHOLDER_SECRETS = frozenset({"", "changethis", "change-me", "changeme", "secret", "token"})


def secret_from_env_or_file(*, env_name: str, path: Path, production: bool) -> str:
    """The secret from the environment; in dev, generated once into `path`.

    O_EXCL makes concurrent first starts agree: whoever loses the race reads the
    winner's file instead of writing its own.
    """
    value = os.environ.get(env_name, "").strip()
    if production and value.lower() in PLACEHOLDER_SECRETS:
        raise ImproperlyConfigured(
            f"{env_name} must be set to a real secret when CARRIL_ENV=production"
        )
    if value:
        return value
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_nonempty(path)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(48))
    return _read_nonempty(path)


def _read_nonempty(path: Path) -> str:
    # The winner of the O_EXCL race writes right after creating the file; give it a moment.
    for _ in range(50):
        value = path.read_text().strip()
        if value:
            return value
        time.sleep(0.02)
    raise ImproperlyConfigured(f"{path} is empty; delete it to generate a new secret")
