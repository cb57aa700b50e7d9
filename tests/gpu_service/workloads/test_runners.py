"""The two halves of every kind: declared in the API process, run in the worker."""

from __future__ import annotations

from typing import get_args

from gpu_service.contract import KindName
from gpu_service.kinds import KINDS
from gpu_service.workloads.runners import RUNNERS


def test_every_kind_the_service_admits_has_a_runner_in_the_worker():
    assert set(KINDS) == set(RUNNERS) == set(get_args(KindName))


def test_a_kind_is_registered_under_its_own_name():
    assert all(kind.name == name for name, kind in KINDS.items())
