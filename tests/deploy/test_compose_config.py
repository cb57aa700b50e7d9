"""deploy/compose_config.py: the Compose files made readable by Compose v1, and the resolved
configuration made runnable without GPUs (what deploy/compose-smoke.sh relies on)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.deploy.deploy_files import ROOT


def config_module():
    spec = importlib.util.spec_from_file_location(
        "compose_config", ROOT / "deploy" / "compose_config.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


compose_config = config_module()


def gpu_service(**extra):
    return {
        "image": "carril-gpu:local",
        "deploy": {
            "resources": {
                "reservations": {
                    "devices": [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
                }
            }
        },
        **extra,
    }


def test_the_portable_copy_drops_the_project_name_and_the_reset_keys(tmp_path):
    out, resets = tmp_path / "simulated.yml", tmp_path / "simulated.resets"
    compose_config.main(
        ["portable", str(ROOT / "docker-compose.simulated.yml"), str(out), str(resets)]
    )
    copy = yaml.safe_load(out.read_text())  # a plain YAML loader reads it: no tags left
    assert "deploy" not in copy["services"]["gpu"]
    assert copy["services"]["gpu"]["environment"]["CARRIL_GPU_RUNTIME"] == "simulated"
    assert json.loads(resets.read_text()) == [["services", "gpu", "deploy"]]

    base = tmp_path / "base.yml"
    compose_config.main(["portable", str(ROOT / "docker-compose.yml"), str(base), str(resets)])
    assert "name" not in yaml.safe_load(base.read_text())
    assert json.loads(resets.read_text()) == []


def test_finishing_removes_the_reset_keys_from_the_resolved_configuration():
    data = {"services": {"gpu": gpu_service(shm_size="1gb")}}
    compose_config.finish(data, resets=[["services", "gpu", "deploy"]], no_gpus=False, images={})
    assert data == {"services": {"gpu": {"image": "carril-gpu:local", "shm_size": "1gb"}}}


def test_without_gpus_the_nvidia_reservation_and_runtime_go_and_the_rest_stays():
    service = gpu_service(runtime="nvidia")
    service["deploy"]["resources"]["limits"] = {"memory": "8g"}
    data = {"services": {"gpu": service, "web": {"image": "carril-web:local"}}}
    notes = compose_config.finish(data, resets=[], no_gpus=True, images={})
    assert data["services"]["gpu"] == {
        "image": "carril-gpu:local",
        "deploy": {"resources": {"limits": {"memory": "8g"}}},
    }
    assert data["services"]["web"] == {"image": "carril-web:local"}
    assert any("GPU device reservation" in note for note in notes)
    assert any("runtime nvidia" in note for note in notes)


def test_a_service_image_can_be_swapped_and_an_unknown_service_is_an_error():
    data = {"services": {"db": {"image": "postgres:17.6-bookworm"}}}
    compose_config.finish(data, resets=[], no_gpus=False, images={"db": "stand-in:15"})
    assert data["services"]["db"]["image"] == "stand-in:15"
    with pytest.raises(SystemExit, match="dbx"):
        compose_config.finish(data, resets=[], no_gpus=False, images={"dbx": "stand-in:15"})


def test_a_ulimit_the_engine_cannot_lift_is_left_to_the_engine():
    data = {"services": {"gpu": {"ulimits": {"memlock": -1, "stack": 67108864}}}}
    compose_config.finish(data, resets=[], no_gpus=False, images={}, drop_ulimits=("memlock",))
    assert data["services"]["gpu"]["ulimits"] == {"stack": 67108864}


def test_a_secret_from_the_environment_becomes_a_private_file_secret_compose_v1_reads(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("CARRIL_METRICS_TOKEN", "scrape-token-for-the-test")
    data = {"secrets": {"carril_metrics_token": {"environment": "CARRIL_METRICS_TOKEN"}}}

    portable, _ = compose_config.portable(data, secrets_dir=tmp_path)

    path = Path(portable["secrets"]["carril_metrics_token"]["file"])
    assert path.read_text() == "scrape-token-for-the-test"
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_later_files_reset_keys_also_leave_the_copies_of_the_files_before_it(tmp_path):
    # Compose v1 refuses `network_mode: host` beside the base file's `networks` while it
    # merges, before `finish` could drop them: the reset has to reach the base's copy.
    copies = []
    for name in (
        "docker-compose.yml",
        "docker-compose.simulated.yml",
        "docker-compose.cluster.yml",
    ):
        out = tmp_path / name
        compose_config.main(
            ["portable", str(ROOT / name), str(out), str(tmp_path / f"{name}.resets"), "--earlier"]
            + [str(c) for c in copies]
        )
        copies.append(out)

    base = yaml.safe_load(copies[0].read_text())["services"]
    assert "networks" not in base["gpu"]
    assert "deploy" not in base["gpu"]
    assert base["web"]["networks"] == ["backend", "frontend"]  # only the reset keys go
    cluster = yaml.safe_load(copies[2].read_text())["services"]
    assert cluster["gpu"]["network_mode"] == "host"
    assert "networks" not in cluster["gpu"]


def test_a_volume_becomes_a_local_one_or_another_projects_existing_volume():
    nfs = {"driver": "local", "driver_opts": {"type": "nfs", "o": "addr=nfs.invalid,rw"}}
    data = {"volumes": {"carril-storage": dict(nfs), "carril-db": {}}}
    compose_config.finish(
        data, resets=[], no_gpus=False, images={}, local_volumes={"carril-storage": None}
    )
    assert data["volumes"] == {"carril-storage": {}, "carril-db": {}}

    data = {"volumes": {"carril-storage": dict(nfs)}}
    compose_config.finish(
        data,
        resets=[],
        no_gpus=False,
        images={},
        local_volumes={"carril-storage": "head_carril-storage"},
    )
    assert data["volumes"]["carril-storage"] == {"external": True, "name": "head_carril-storage"}
    with pytest.raises(SystemExit, match="nowhere"):
        compose_config.finish(
            data, resets=[], no_gpus=False, images={}, local_volumes={"nowhere": None}
        )
