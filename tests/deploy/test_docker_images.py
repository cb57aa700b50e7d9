"""The two Dockerfiles: multi-stage, pinned bases, non-root, healthchecks; the web image
without torch, the GPU image on the pinned CUDA build of torch."""

from __future__ import annotations

import re

import pytest

from tests.deploy.deploy_files import ROOT

DOCKERFILES = ["Dockerfile.web", "Dockerfile.gpu"]


def instructions(name: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / name).read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def args_defaults(name: str) -> dict[str, str]:
    defaults = {}
    for keyword, rest in instructions(name):
        if keyword == "ARG" and "=" in rest:
            key, _, value = rest.partition("=")
            defaults[key] = value
    return defaults


def base_images(name: str) -> list[str]:
    defaults = args_defaults(name)
    bases = []
    for keyword, rest in instructions(name):
        if keyword == "FROM":
            image = rest.split()[0]
            bases.append(re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], image))
    return bases


@pytest.mark.parametrize("name", DOCKERFILES)
def test_each_image_is_built_in_stages_on_a_pinned_base(name):
    bases = base_images(name)
    assert len(bases) >= 2, "a build stage and a runtime stage"
    for image in bases:
        tag = image.partition(":")[2]
        assert tag != "latest", image
        assert re.match(r"\d+\.\d+\.\d+", tag), f"{image}: pin an exact version"


@pytest.mark.parametrize("name", DOCKERFILES)
def test_each_image_runs_as_the_shared_non_root_uid(name):
    users = [rest for keyword, rest in instructions(name) if keyword == "USER"]
    assert users, "no USER: the image would run as root"
    assert users[-1] == "10001:10001"
    # Both images write the shared storage volume: the same uid in both.
    assert "--uid 10001" in (ROOT / name).read_text()


@pytest.mark.parametrize("name", DOCKERFILES)
def test_each_image_has_a_healthcheck_on_its_health_endpoint(name):
    checks = [rest for keyword, rest in instructions(name) if keyword == "HEALTHCHECK"]
    assert len(checks) == 1
    port = {"Dockerfile.web": 8000, "Dockerfile.gpu": 8001}[name]
    assert f"127.0.0.1:{port}/healthz" in checks[0]


@pytest.mark.parametrize("name", DOCKERFILES)
def test_each_image_keeps_storage_at_the_shared_path(name):
    text = (ROOT / name).read_text()
    assert "CARRIL_STORAGE=/srv/carril" in text
    assert "/srv/carril" in text.split("install -d", 1)[1].splitlines()[0]


def test_the_web_image_installs_only_the_web_requirements_and_refuses_torch():
    text = (ROOT / "Dockerfile.web").read_text()
    assert "requirements/web.txt" in text
    assert "requirements/gpu.txt" not in text
    assert "pip show torch" in text  # the build fails if torch ever sneaks in
    copies = [rest for keyword, rest in instructions("Dockerfile.web") if keyword == "COPY"]
    # Of the GPU service, only the standard-library contract the web reads answers with.
    from_gpu = [copy for copy in copies if "gpu_service" in copy]
    assert from_gpu == ["gpu_service/__init__.py gpu_service/contract.py /app/gpu_service/"]


def test_the_gpu_image_installs_the_pinned_cuda_build_of_torch_and_headless_opencv():
    text = (ROOT / "Dockerfile.gpu").read_text()
    assert "requirements/gpu.txt" in text
    assert "pip uninstall --yes opencv-python" in text
    assert "opencv-python-headless==" in text
    # The torch wheel's CUDA major version is what the host driver must support.
    assert 'NVIDIA_REQUIRE_CUDA="cuda>=13.0"' in text
    assert "torch==2.14.1" in (ROOT / "requirements" / "gpu.txt").read_text().split()
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in text


def test_the_gpu_image_keeps_ultralytics_offline():
    text = (ROOT / "Dockerfile.gpu").read_text()
    assert "YOLO_OFFLINE=1" in text
    assert "YOLO_CONFIG_DIR=/srv/carril/ultralytics" in text


def test_the_gpu_image_starts_the_gpu_service_module():
    cmd = [rest for keyword, rest in instructions("Dockerfile.gpu") if keyword == "CMD"]
    assert cmd == ['["python", "-m", "gpu_service"]']
