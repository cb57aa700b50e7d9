"""Small typed readers for the environment; every knob the web app has is `CARRIL_*`."""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import time
import zlib
from collections import Counter
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


def prices_parse(raw: str) -> dict[str, float]:
    """`name=price,name=price` (a GPU model's name as the runtime reports it, and a price
    of 0 or more), names compared without case. ValueError says what is wrong and where."""
    prices: dict[str, float] = {}
    seen: dict[str, str] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        name, equals, value = (piece.strip() for piece in item.rpartition("="))
        if not equals or not name:
            raise ValueError(f"{item!r} is not name=price (for example 'NVIDIA H100=2.5')")
        try:
            price = float(value)
        except ValueError:
            raise ValueError(f"the price of {name!r} is not a number: {value!r}") from None
        if not math.isfinite(price) or price < 0:
            raise ValueError(f"the price of {name!r} must be 0 or more, got {value!r}")
        if name.casefold() in seen:
            raise ValueError(f"{name!r} is given twice (also as {seen[name.casefold()]!r})")
        seen[name.casefold()] = name
        prices[name] = price
    return prices


def env_prices(name: str) -> dict[str, float]:
    try:
        return prices_parse(os.environ.get(name, ""))
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from exc


def storage_root() -> Path:
    """CARRIL_STORAGE resolved to an absolute path: both services must agree on it."""
    return Path(os.environ.get("CARRIL_STORAGE", "./var")).expanduser().resolve()


# What every Carril process creates is its owner's only: storage holds users' datasets,
# models and the databases (ADR 0057). Both services run as one user (the images share
# uid 10001), so owner-only modes keep nothing from the other service.
PRIVATE_UMASK = 0o077


def storage_make_private(root: Path) -> Path:
    """Give this process an owner-only umask, and `root` (made if missing) mode 0700.

    An existing root of ours that others may enter is closed too, which also closes
    what older versions wrote inside it with wider modes.
    """
    os.umask(PRIVATE_UMASK)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = root.stat()
    if info.st_uid == os.geteuid() and info.st_mode & 0o077:
        root.chmod(0o700)
    return root


# Values from examples and templates (.env.example says `changethis`): never a secret.
PLACEHOLDER_SECRETS = frozenset({"", "changethis", "change-me", "changeme", "secret", "token"})


# What `secrets.token_urlsafe(32)` gives is 43 characters and about 200 bits by the
# estimate below; these bounds refuse what a person types, not what a generator makes.
MIN_SECRET_CHARS = 32
MIN_SECRET_BITS = 100.0
# A secret that zlib shrinks below this share of its length repeats itself.
MIN_SECRET_INCOMPRESSIBILITY = 0.75


def secret_weakness(value: str) -> str | None:
    """Why `value` is too weak to be a production secret, or None. Never says the value.

    The entropy estimate is the Shannon entropy of its characters times its length: an
    upper bound for anything a person picked, so refusing below it refuses only the weak.
    """
    if value.strip().lower() in PLACEHOLDER_SECRETS:
        return "it is empty or a placeholder from an example"
    if len(value) < MIN_SECRET_CHARS:
        return f"it is shorter than {MIN_SECRET_CHARS} characters"
    counts = Counter(value)
    per_char = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    if per_char * len(value) < MIN_SECRET_BITS:
        return f"it has less than {MIN_SECRET_BITS:.0f} bits of entropy"
    if len(zlib.compress(value.encode(), 9)) < MIN_SECRET_INCOMPRESSIBILITY * len(value):
        return "it repeats itself"
    return None


def production_secret_check(*, env_name: str, value: str) -> None:
    reason = secret_weakness(value)
    if reason is not None:
        raise ImproperlyConfigured(
            f"{env_name} is too weak for CARRIL_ENV=production: {reason}. Generate one with: "
            'python3 -c "import secrets; print(secrets.token_urlsafe(48))"'
        )


def private_file_create(path: Path) -> None:
    """Create `path` empty and readable by its owner only (0600), unless it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def secret_from_env_or_file(*, env_name: str, path: Path, production: bool) -> str:
    """The secret from the environment; in dev, generated once into `path` (0600).

    O_EXCL makes concurrent first starts agree: whoever loses the race reads the
    winner's file instead of writing its own.
    """
    value = os.environ.get(env_name, "").strip()
    if production:
        production_secret_check(env_name=env_name, value=value)
    if value:
        return value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
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
