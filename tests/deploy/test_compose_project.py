"""The Compose project keeps the promises of the operations issue: GPUs declared, the GPU
service unreachable from the host, one storage path everywhere, secrets from the env file,
healthchecks and restart policies, and a simulated variant that needs no GPU."""

from __future__ import annotations

import re

import pytest

from tests.deploy.deploy_files import ROOT, compose, interpolate_defaults, load_yaml

STORAGE = "/srv/carril"
APP_SERVICES = ["web", "reconciler", "gpu"]
SECRETS = {
    "CARRIL_GPU_SERVICE_TOKEN",
    "CARRIL_METRICS_TOKEN",
    "CARRIL_SECRET_KEY",
    "POSTGRES_PASSWORD",
    "CARRIL_DEMO_PASSWORD",
    "CARRIL_GRAFANA_ADMIN_PASSWORD",
}


def services(*, simulated: bool = False) -> dict:
    return compose(simulated=simulated)["services"]


def env_example() -> dict[str, str]:
    pairs = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def size_in_bytes(text: str) -> int:
    number, unit = re.fullmatch(r"(\d+)\s*([kmg]?)b?", text.lower()).groups()
    return int(number) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit]


def test_the_gpu_service_is_not_published_to_the_host():
    gpu = services()["gpu"]
    assert "ports" not in gpu
    assert gpu.get("network_mode") is None


def test_the_gpu_service_is_only_on_internal_networks_shared_with_web_and_reconciler():
    project = compose()
    gpu_networks = set(project["services"]["gpu"]["networks"])
    assert gpu_networks
    for network in gpu_networks:
        assert project["networks"][network].get("internal") is True, network
    for caller in ("web", "reconciler"):
        assert gpu_networks & set(project["services"][caller]["networks"]), caller


def test_the_web_app_reaches_the_gpu_service_by_its_compose_name():
    for name in ("web", "reconciler"):
        assert services()[name]["environment"]["CARRIL_GPU_SERVICE_URL"] == "http://gpu:8001"
    gpu_env = services()["gpu"]["environment"]
    assert gpu_env["CARRIL_GPU_HOST"] == "0.0.0.0"  # noqa: S104 - inside its own container
    assert str(gpu_env["CARRIL_GPU_PORT"]) == "8001"


def test_the_gpu_service_declares_every_nvidia_gpu():
    devices = services()["gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert services()["gpu"]["environment"]["CARRIL_GPU_RUNTIME"] == "real"


def test_no_other_service_gets_a_gpu():
    for name, service in services().items():
        if name != "gpu":
            assert "deploy" not in service, name


def test_the_gpu_service_gets_shared_memory_for_pytorch_data_loaders():
    shm = interpolate_defaults(str(services()["gpu"]["shm_size"]))
    # Docker's default is 64 MB, which kills data-loader workers with a bus error.
    assert size_in_bytes(shm) >= 2 * 1024**3


@pytest.mark.parametrize("name", APP_SERVICES)
def test_every_service_that_touches_job_files_mounts_storage_at_the_same_path(name):
    service = services()[name]
    mounts = [m for m in service["volumes"] if isinstance(m, dict)]
    storage = [m for m in mounts if m.get("source") == "carril-storage"]
    assert storage == [{"type": "volume", "source": "carril-storage", "target": STORAGE}]
    assert service["environment"]["CARRIL_STORAGE"] == STORAGE


def test_the_storage_volume_is_one_named_volume():
    assert "carril-storage" in compose()["volumes"]


@pytest.mark.parametrize("name", APP_SERVICES)
def test_the_services_run_in_production_mode_with_json_logs(name):
    env = services()[name]["environment"]
    assert env["CARRIL_ENV"] == "production"
    assert env["CARRIL_LOG_FORMAT"] == "json"


def test_every_secret_comes_from_the_env_file_and_is_required_where_it_is_used():
    text = (ROOT / "docker-compose.yml").read_text()
    for secret in SECRETS - {"CARRIL_DEMO_PASSWORD"}:
        assert re.search(r"\$\{" + secret + r":\?[^}]+\}", text), secret
    # No secret value is written into the Compose file itself.
    for service in services().values():
        for key, value in (service.get("environment") or {}).items():
            if key in SECRETS:
                assert str(value).startswith("${"), key


def test_the_database_url_points_at_the_db_service_with_the_env_file_password():
    url = services()["web"]["environment"]["DATABASE_URL"]
    assert url.startswith("postgres://carril:${POSTGRES_PASSWORD")
    assert url.endswith("@db:5432/carril")


@pytest.mark.parametrize("name", ["db", "web", "reconciler", "gpu", "prometheus", "grafana"])
def test_every_service_has_a_healthcheck_and_a_restart_policy(name):
    service = services()[name]
    assert service["healthcheck"]["test"], name
    assert service["restart"] in {"unless-stopped", "always"}, name


def test_web_waits_for_a_healthy_database_and_the_reconciler_for_a_migrated_web():
    assert services()["web"]["depends_on"]["db"]["condition"] == "service_healthy"
    assert services()["reconciler"]["depends_on"]["web"]["condition"] == "service_healthy"


def test_the_web_app_migrates_on_start_and_the_reconciler_runs_the_loop():
    assert services()["web"]["command"] == ["serve"]
    assert services()["reconciler"]["command"] == ["reconcile"]
    entrypoint = (ROOT / "deploy" / "docker" / "web-entrypoint.sh").read_text()
    serve = entrypoint.split("serve)", 1)[1].split(";;", 1)[0]
    assert serve.index("manage.py migrate") < serve.index("exec gunicorn")
    assert "exec python manage.py reconcile" in entrypoint


def test_the_database_keeps_its_data_in_a_named_volume():
    mounts = services()["db"]["volumes"]
    assert {"type": "volume", "source": "carril-db", "target": "/var/lib/postgresql/data"} in mounts


def test_only_the_web_app_and_the_monitoring_uis_are_published_and_on_loopback_by_default():
    published = {name for name, service in services().items() if service.get("ports")}
    assert published == {"web", "prometheus", "grafana"}
    for name in published:
        for port in services()[name]["ports"]:
            assert interpolate_defaults(port).startswith("127.0.0.1:"), (name, port)


def test_prometheus_and_grafana_run_only_with_the_monitoring_profile():
    for name, service in services().items():
        expected = ["monitoring"] if name in {"prometheus", "grafana"} else None
        assert service.get("profiles") == expected, name


def test_grafana_refuses_anonymous_viewers_and_takes_its_password_from_the_env_file():
    env = services()["grafana"]["environment"]
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert env["GF_SECURITY_ADMIN_PASSWORD"].startswith("${CARRIL_GRAFANA_ADMIN_PASSWORD:?")


def test_the_simulated_variant_runs_the_simulated_runtime_without_a_gpu_reservation():
    gpu = services(simulated=True)["gpu"]
    assert gpu["environment"]["CARRIL_GPU_RUNTIME"] == "simulated"
    assert "deploy" not in gpu
    # Everything else about the GPU service stays as on the real machine.
    assert gpu["environment"]["CARRIL_ENV"] == "production"
    assert "ports" not in gpu
    assert services(simulated=True).keys() == services().keys()


def test_the_simulated_override_resets_the_reservation_rather_than_emptying_it():
    # Compose merges device lists, so only `!reset` really removes the reservation.
    override = (ROOT / "docker-compose.simulated.yml").read_text()
    assert re.search(r"^\s+deploy: !reset", override, flags=re.MULTILINE)
    assert load_yaml(name="docker-compose.simulated.yml")["services"].keys() == {"gpu"}


def test_every_variable_the_compose_files_read_is_documented_in_env_example():
    documented = env_example().keys()
    for name in ("docker-compose.yml", "docker-compose.simulated.yml"):
        text = (ROOT / name).read_text()
        used = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", text))
        assert used <= documented, (name, sorted(used - documented))


def test_every_variable_in_env_example_reaches_a_compose_file():
    # The env file only feeds Compose's interpolation: a variable no Compose file reads
    # would be a setting that silently does nothing.
    used = set()
    for name in ("docker-compose.yml", "docker-compose.simulated.yml"):
        used |= set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", (ROOT / name).read_text()))
    assert env_example().keys() <= used, sorted(env_example().keys() - used)


def test_env_example_holds_placeholders_that_the_services_refuse_not_secrets():
    values = env_example()
    for secret in SECRETS:
        assert values[secret] in {"changethis", ""}, secret


def test_env_files_are_kept_out_of_git_and_out_of_the_images():
    assert ".env" in (ROOT / ".gitignore").read_text().split()
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    rules = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    # An allow-list: everything is excluded first, then only source folders are let back in.
    assert rules[0] == "*"
    allowed = [rule[1:] for rule in rules if rule.startswith("!")]
    assert set(allowed) == {"requirements/", "web/", "gpu_service/", "deploy/docker/"}
