"""Where the command finds its server and token: CARRIL_URL / CARRIL_TOKEN first (CI),
then the file `carril login` wrote (`$CARRIL_CONFIG_DIR` or `$XDG_CONFIG_HOME/carril` or
`~/.config/carril`, `config.json`, mode 0600)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000"


def config_dir() -> Path:
    explicit = os.environ.get("CARRIL_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "carril"


def config_path() -> Path:
    return config_dir() / "config.json"


@dataclass(frozen=True)
class Settings:
    url: str
    token: str | None
    source: str  # where the token came from: "environment", the file's path, or "none"


def settings_load() -> Settings:
    stored: dict[str, str] = {}
    path = config_path()
    if path.is_file():
        try:
            stored = json.loads(path.read_text())
        except ValueError:
            stored = {}
    url = os.environ.get("CARRIL_URL") or stored.get("url") or DEFAULT_URL
    if os.environ.get("CARRIL_TOKEN"):
        return Settings(url=url, token=os.environ["CARRIL_TOKEN"], source="environment")
    if stored.get("token"):
        return Settings(url=url, token=stored["token"], source=str(path))
    return Settings(url=url, token=None, source="none")


def settings_store(*, url: str, token: str) -> Path:
    """Write the file readable by its owner only, created so: never briefly world-readable."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(path.name + ".tmp")
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump({"url": url, "token": token}, out)
    os.chmod(partial, 0o600)
    partial.replace(path)
    return path
