"""docker-compose.cluster.yml: the Ray head next to the GPU service, a node per GPU host."""

from __future__ import annotations

from tests.deploy.deploy_files import ROOT, compose_merge, load_yaml


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


def test_the_gpu_service_joins_ray_through_the_heads_node_its_processes_and_sockets():
    # A Ray driver connects through a Ray node of its own machine: it finds the raylet
    # among its processes and talks to it over the sockets in the node's session folder.
    services = _merged()["services"]
    gpu, head = services["gpu"], services["ray-head"]
    assert gpu["pid"] == "service:ray-head"
    assert gpu["depends_on"]["ray-head"]["condition"] == "service_healthy"
    # (Compose merges a service's volumes by target: the gpu keeps the base's storage.)
    for service in (gpu, head):
        mounts = {v["target"]: v["source"] for v in service["volumes"]}
        assert mounts["/tmp/ray"] == "ray-session"
    assert {"target": "/srv/carril", "source": "carril-storage", "type": "volume"} in head[
        "volumes"
    ]
    session = load_yaml(name="docker-compose.cluster.yml")["volumes"]["ray-session"]
    assert session["driver_opts"]["type"] == "tmpfs"
    assert "uid=10001" in session["driver_opts"]["o"]  # the images' user, not root


def test_the_heads_healthcheck_asks_the_gcs_on_its_port_without_leaving_loopback():
    test = _merged()["services"]["ray-head"]["healthcheck"]["test"]
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" in test
    assert test[test.index("health-check") + 2] == "127.0.0.1:${CARRIL_RAY_PORT:-6379}"


def test_web_and_reconciler_reach_the_gpu_service_on_the_hosts_network_at_its_one_port():
    services = _merged()["services"]
    url = "http://host.docker.internal:${CARRIL_GPU_PORT:-8001}"
    gpu = services["gpu"]
    assert gpu["environment"]["CARRIL_GPU_PORT"] == "${CARRIL_GPU_PORT:-8001}"
    assert "127.0.0.1:${CARRIL_GPU_PORT:-8001}/healthz" in gpu["healthcheck"]["test"][-1]
    for name in ("web", "reconciler"):
        assert services[name]["environment"]["CARRIL_GPU_SERVICE_URL"] == url
        assert "host.docker.internal:host-gateway" in services[name]["extra_hosts"]
    # `backend` is internal: without `frontend` the reconciler could not leave it.
    assert "frontend" in services["reconciler"]["networks"]


def test_every_ray_node_takes_its_address_and_port_block_from_the_env_file():
    cluster = load_yaml(name="docker-compose.cluster.yml")["services"]
    for name in ("ray-head", "ray-node"):
        env = cluster[name]["environment"]
        assert env["CARRIL_RAY_NODE_IP"] == "${CARRIL_RAY_NODE_IP:-}"
        assert env["CARRIL_RAY_NODE_PORTS"] == "${CARRIL_RAY_NODE_PORTS:-}"
        assert cluster[name]["network_mode"] == "host"


def test_a_gpu_hosts_command_reads_the_whole_project():
    # The cluster file alone is no project (its web, gpu and reconciler have no image).
    header = (ROOT / "docker-compose.cluster.yml").read_text().split("\n\n", 1)[0]
    node_command = next(line for line in header.splitlines() if "up -d ray-node" in line)
    assert "-f docker-compose.yml -f docker-compose.cluster.yml --profile node" in node_command
