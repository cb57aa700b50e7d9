"""docker-compose.cluster.yml: the Ray head next to the GPU service, a node per GPU host."""

from __future__ import annotations

from tests.deploy.deploy_files import compose_merge, load_yaml


def _merged() -> dict:
    return compose_merge(
        base=load_yaml(name="docker-compose.yml"),
        override=load_yaml(name="docker-compose.cluster.yml"),
    )


def test_the_gpu_service_runs_in_ray_mode_next_to_a_ray_head_without_gpus():
    services = _merged()["services"]
    gpu = services["gpu"]
    assert gpu["environment"]["CARRIL_EXECUTOR"] == "ray"
    assert gpu["environment"]["CARRIL_RAY_ADDRESS"].startswith("127.0.0.1:")
    assert "deploy" not in gpu  # reset: the head machine needs no GPU
    assert gpu["network_mode"] == "host"  # Ray's nodes dial their driver back
    assert services["ray-head"]["command"] == ["python", "-m", "gpu_service.cluster", "head"]
    assert services["ray-head"]["environment"]["RAY_USAGE_STATS_ENABLED"] == "0"


def test_each_gpu_host_runs_a_ray_node_declaring_its_gpus_on_the_shared_storage():
    cluster = load_yaml(name="docker-compose.cluster.yml")
    node = cluster["services"]["ray-node"]
    assert node["profiles"] == ["node"]  # only where asked for: on the GPU hosts
    assert node["command"][:4] == ["python", "-m", "gpu_service.cluster", "node"]
    assert node["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert node["volumes"][0]["target"] == "/srv/carril"  # the same path everywhere
    assert cluster["volumes"]["carril-storage"]["driver_opts"]["type"] == "nfs"
