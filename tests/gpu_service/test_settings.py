from __future__ import annotations

import pytest

from gpu_service.errors import ValidationFailed
from gpu_service.settings import load_settings, parse_lane_capacity


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("CARRIL_GPU_SERVICE_TOKEN", "CARRIL_ENV", "CARRIL_STORAGE"):
        monkeypatch.delenv(name, raising=False)


def test_it_refuses_to_start_without_a_token_in_production(monkeypatch, tmp_path):
    monkeypatch.setenv("CARRIL_ENV", "production")
    with pytest.raises(ValidationFailed):
        load_settings(storage=tmp_path)


def test_it_refuses_a_placeholder_token_in_production(monkeypatch, tmp_path):
    monkeypatch.setenv("CARRIL_ENV", "production")
    monkeypatch.setenv("CARRIL_GPU_SERVICE_TOKEN", "changethis")
    with pytest.raises(ValidationFailed):
        load_settings(storage=tmp_path)


def test_it_takes_the_token_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CARRIL_GPU_SERVICE_TOKEN", "s3cr3t-value")
    settings = load_settings(storage=tmp_path)
    assert settings.token == "s3cr3t-value"
    assert "s3cr3t-value" not in repr(settings)


def test_dev_mode_generates_one_token_that_every_starter_shares(tmp_path):
    first = load_settings(storage=tmp_path)
    second = load_settings(storage=tmp_path)
    assert len(first.token) > 20
    assert first.token == second.token
    path = tmp_path / "secrets" / "gpu_service_token"
    assert path.read_text().strip() == first.token
    assert path.stat().st_mode & 0o077 == 0


def test_storage_is_resolved_to_an_absolute_path(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CARRIL_STORAGE", "rel/store")
    settings = load_settings()
    assert settings.storage == tmp_path / "rel" / "store"
    assert settings.storage.is_dir()


def test_lane_capacity_is_one_number_or_per_gpu():
    assert parse_lane_capacity("1", gpu_count=2) == {0: 1, 1: 1}
    assert parse_lane_capacity("0:2", gpu_count=2) == {0: 2, 1: 1}
    with pytest.raises(ValidationFailed):
        parse_lane_capacity("lots", gpu_count=2)


def test_ray_mode_refuses_to_start_without_the_head_address(monkeypatch, tmp_path):
    monkeypatch.setenv("CARRIL_EXECUTOR", "ray")
    monkeypatch.delenv("CARRIL_RAY_ADDRESS", raising=False)
    with pytest.raises(ValidationFailed, match="CARRIL_RAY_ADDRESS"):
        load_settings(storage=tmp_path)
    monkeypatch.setenv("CARRIL_RAY_ADDRESS", "127.0.0.1:6379")
    assert load_settings(storage=tmp_path).ray_address == "127.0.0.1:6379"
