"""Settings are read from the environment when Django starts; production refuses unsafe
defaults. Each case starts a fresh interpreter, as a deployment would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PRINT = (
    "import django; django.setup(); from django.conf import settings as s; "
    "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY)"
)


# Strong enough for production: what the operations guide tells people to generate.
KEY = "Zq3v8-NwLx0pT_5yGk1uRbH7mA2sEc9dJf4hVo6iWn_X"
TOKEN = "P7nVw2_qXk9LzT4sYb0mRc8HdJ5uEa1gFo3iKl6tNp-Q"


def start(tmp_path: Path, *, code: str = PRINT, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CARRIL_")}
    clean.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT / "web",
        env={
            **clean,
            "DJANGO_SETTINGS_MODULE": "carril_web.settings",
            "CARRIL_STORAGE": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = start(tmp_path, CARRIL_ENV="production", CARRIL_GPU_SERVICE_TOKEN=TOKEN)
    assert result.returncode != 0
    assert "CARRIL_SECRET_KEY" in result.stderr


def test_production_refuses_to_start_without_the_gpu_service_token(tmp_path):
    result = start(tmp_path, CARRIL_ENV="production", CARRIL_SECRET_KEY=KEY)
    assert result.returncode != 0
    assert "CARRIL_GPU_SERVICE_TOKEN" in result.stderr


def test_production_refuses_the_placeholder_secrets_of_the_env_example(tmp_path):
    secret = start(
        tmp_path,
        CARRIL_ENV="production",
        CARRIL_SECRET_KEY="changethis",
        CARRIL_GPU_SERVICE_TOKEN=TOKEN,
    )
    assert secret.returncode != 0
    assert "CARRIL_SECRET_KEY is too weak" in secret.stderr
    token = start(
        tmp_path,
        CARRIL_ENV="production",
        CARRIL_SECRET_KEY=KEY,
        CARRIL_GPU_SERVICE_TOKEN="changethis",
    )
    assert token.returncode != 0
    assert "CARRIL_GPU_SERVICE_TOKEN is too weak" in token.stderr


def test_production_sets_secure_cookies_and_no_debug(tmp_path):
    result = start(
        tmp_path,
        CARRIL_ENV="production",
        CARRIL_SECRET_KEY=KEY,
        CARRIL_GPU_SERVICE_TOKEN=TOKEN,
        CARRIL_DEBUG="1",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "True", "True"]


def test_dev_generates_a_secret_key_once_into_storage(tmp_path):
    assert start(tmp_path).returncode == 0
    key_file = tmp_path / "secrets" / "django_secret_key"
    first = key_file.read_text()
    assert len(first) > 40
    assert start(tmp_path).returncode == 0
    assert key_file.read_text() == first
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"


def test_a_bad_number_in_the_environment_is_refused_by_name(tmp_path):
    result = start(tmp_path, CARRIL_UPLOAD_MAX_BYTES="lots")
    assert result.returncode != 0
    assert "CARRIL_UPLOAD_MAX_BYTES" in result.stderr


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("NVIDIA H100", "'NVIDIA H100' is not name=price"),
        ("NVIDIA H100=cheap", "the price of 'NVIDIA H100' is not a number: 'cheap'"),
        ("NVIDIA A10=-1", "the price of 'NVIDIA A10' must be 0 or more"),
        ("A10=1,a10=2", "'a10' is given twice"),
        ("=2", "'=2' is not name=price"),
    ],
)
def test_a_bad_gpu_price_list_stops_the_start_with_what_is_wrong(tmp_path, raw, problem):
    result = start(tmp_path, CARRIL_GPU_PRICES=raw)
    assert result.returncode != 0
    assert f"CARRIL_GPU_PRICES: {problem}" in result.stderr


def test_gpu_prices_are_read_per_model_when_the_web_starts(tmp_path):
    result = start(
        tmp_path,
        code="import django; django.setup(); from django.conf import settings as s; "
        "print(s.CARRIL_GPU_PRICES)",
        CARRIL_GPU_PRICES=" NVIDIA H100 80GB HBM3 = 2.5 , NVIDIA A10=0.9,",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{'NVIDIA H100 80GB HBM3': 2.5, 'NVIDIA A10': 0.9}"


WEAK = {
    "too_short": "Zq3v8-NwLx0pT_5yGk1uRb",
    "one_character": "k" * 50,
    "a_repeated_word": "password1234" * 4,
    "a_repeated_pattern": "abcdefgh" * 8,
}


@pytest.mark.parametrize("case", sorted(WEAK))
@pytest.mark.parametrize(
    "name", ["CARRIL_SECRET_KEY", "CARRIL_GPU_SERVICE_TOKEN", "CARRIL_METRICS_TOKEN"]
)
def test_production_refuses_weak_secrets_not_only_placeholders(tmp_path, case, name):
    env = {"CARRIL_SECRET_KEY": KEY, "CARRIL_GPU_SERVICE_TOKEN": TOKEN, name: WEAK[case]}
    result = start(tmp_path, CARRIL_ENV="production", **env)
    assert result.returncode != 0
    assert f"{name} is too weak" in result.stderr
    assert WEAK[case] not in result.stderr  # the refusal never repeats the secret


@pytest.mark.parametrize("nbytes", [24, 32, 48])
def test_production_accepts_generated_secrets(tmp_path, nbytes):
    import secrets

    env = {
        "CARRIL_SECRET_KEY": secrets.token_urlsafe(nbytes),
        "CARRIL_GPU_SERVICE_TOKEN": secrets.token_hex(nbytes),
        "CARRIL_METRICS_TOKEN": secrets.token_urlsafe(nbytes),
    }
    result = start(tmp_path, CARRIL_ENV="production", **env)
    assert result.returncode == 0, result.stderr


def test_dev_creates_its_sqlite_database_and_secrets_readable_by_the_owner_only(tmp_path):
    assert start(tmp_path).returncode == 0
    for path in (tmp_path / "web.sqlite3", tmp_path / "secrets" / "django_secret_key"):
        assert oct(path.stat().st_mode & 0o777) == "0o600", path
    assert oct((tmp_path / "secrets").stat().st_mode & 0o777) == "0o700"
