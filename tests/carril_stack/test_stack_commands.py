"""The command lines and environment shared by `make run`, the test harness and the bench."""

from __future__ import annotations

from carril_stack import commands


def test_a_secret_is_created_once_readable_only_by_its_owner(tmp_path):
    path = tmp_path / "secrets" / "token"
    first = commands.read_or_create_secret(path)
    second = commands.read_or_create_secret(path)
    assert first == second
    assert len(first) >= 32
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_environment_adds_the_import_paths_of_both_services(tmp_path):
    env = commands.environment({"CARRIL_STORAGE": str(tmp_path), "PYTHONPATH": "/elsewhere"})
    assert env["PYTHONPATH"].split(":") == [str(commands.WEB), str(commands.ROOT), "/elsewhere"]


def test_make_run_serves_the_wsgi_app_where_the_environment_says():
    env = {"CARRIL_WEB_HOST": "127.0.0.2", "CARRIL_WEB_PORT": "8123"}
    gpu, web, reconciler = commands.services(env)
    assert gpu.argv[1:] == ("-m", "gpu_service")
    assert "carril_web.wsgi:application" in web.argv
    assert web.argv[web.argv.index("--bind") + 1] == "127.0.0.2:8123"
    assert reconciler.argv[-1] == "reconcile"  # its pace comes from the environment


def test_a_launcher_may_set_the_reconciler_pace_and_the_gunicorn_size():
    web = commands.web(bind="127.0.0.1:1", workers=1, threads=8, access_log=False)
    assert web.argv[web.argv.index("--workers") + 1] == "1"
    assert web.argv[web.argv.index("--threads") + 1] == "8"
    assert "--access-logfile" not in web.argv
    assert commands.reconciler(interval_s=0.5).argv[-2:] == ("--interval", "0.5")
