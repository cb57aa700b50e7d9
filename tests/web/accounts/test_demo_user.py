"""`manage.py ensure_demo_user` makes an ordinary user (Compose) or, as `make run` asks, an
administrator, and prints its password only once."""

from __future__ import annotations

import io

from accounts.services import user_is_administrator
from django.contrib.auth.models import User
from django.core.management import call_command


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("ensure_demo_user", *args, stdout=out)
    return out.getvalue()


def test_it_creates_an_ordinary_user_and_prints_the_generated_password_once(db):
    first = run()
    password = first.strip().rsplit(" ", 1)[-1]
    demo = User.objects.get(username="demo")
    assert demo.check_password(password)
    assert not demo.is_staff
    assert not demo.is_superuser
    assert not user_is_administrator(user=demo)
    second = run()
    assert password not in second
    assert "already" in second


def test_it_uses_the_password_from_the_environment(db, monkeypatch):
    monkeypatch.setenv("CARRIL_DEMO_PASSWORD", "a-long-demo-password-42")
    assert "a-long-demo-password-42" in run()
    assert User.objects.get(username="demo").check_password("a-long-demo-password-42")
    assert "a-long-demo-password-42" not in run()


def test_the_administrators_group_exists_after_migrations(db):
    from django.contrib.auth.models import Group

    assert Group.objects.filter(name="Administrators").exists()


def test_make_runs_demo_user_is_an_administrator_who_may_promote(db):
    run("--administrator")
    demo = User.objects.get(username="demo")
    assert demo.is_staff
    assert demo.is_superuser
    assert user_is_administrator(user=demo)  # the registry: promotion, imports


def test_a_demo_user_made_ordinary_by_an_earlier_start_becomes_an_administrator(db):
    first = run()
    password = first.strip().rsplit(" ", 1)[-1]
    second = run("--administrator")
    demo = User.objects.get(username="demo")
    assert user_is_administrator(user=demo)
    assert demo.check_password(password)  # the same password; not shown again
    assert password not in second


def test_make_run_prepares_the_demo_user_as_an_administrator():
    from carril_stack import commands

    argv = [c.argv for c in commands.preparation() if c.name == "manage-ensure_demo_user"]
    assert argv
    assert argv[0][-1] == "--administrator"
