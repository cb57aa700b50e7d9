"""Odd bytes and encodings in every file route's path segments answer 404, never a 500.

A NUL byte reaches `os.stat` as a ValueError, an overlong name as ENAMETOOLONG, broken
UTF-8 as a surrogate: each is just a path the route cannot serve."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from tests.security.conftest import World

# Raw (already percent-encoded) path segments, as a client could send them.
ODD_SEGMENTS = [
    "%00",
    "a.png%00",
    "a.png%00.png",
    "%00/../a.png",
    "a%01%02%1f.png",
    "%7f.png",
    "%ff%fe.png",
    "%c0%ae%c0%ae",  # overlong UTF-8 for ".."
    "%ed%a0%80.png",  # a UTF-16 surrogate in UTF-8
    "%e2%80%ae.png",  # right-to-left override
    "%ef%bc%8e%ef%bc%8e",  # fullwidth dots
    "a" * 300 + ".png",
    "b" * 5000,
    "%25%30%30",  # a double-encoded NUL
    "%5c%00",
]


def _get(client, base: str, placeholder: str, segment: str):
    return client.get(base[: -len(placeholder)] + segment)


def _assert_404(response) -> None:
    assert response.status_code == 404, (response.status_code, getattr(response, "content", b""))


@pytest.mark.parametrize("segment", ODD_SEGMENTS)
def test_the_artifact_route_answers_404_for_odd_bytes(segment: str, world: World) -> None:
    client = APIClient()
    client.force_authenticate(world.owner)
    base = reverse("api:job-artifact", kwargs={"job_id": world.training.id, "relpath": "x"})
    _assert_404(_get(client, base, "x", segment))
    _assert_404(_get(client, base, "x", f"sub/{segment}"))


@pytest.mark.parametrize("segment", ODD_SEGMENTS)
@pytest.mark.parametrize("route", ["api:dataset-image", "ui:dataset_image"])
def test_the_dataset_image_routes_answer_404_for_odd_bytes(
    segment: str, route: str, world: World
) -> None:
    client = APIClient() if route.startswith("api:") else Client()
    client.force_login(world.owner)
    base = reverse(route, kwargs={"dataset_id": world.dataset.id, "split": "train", "name": "n"})
    _assert_404(_get(client, base, "n", segment))
    _assert_404(_get(client, base, "train/n", f"{segment}/a.png"))


@pytest.mark.parametrize("segment", ODD_SEGMENTS)
def test_the_inference_image_route_answers_404_for_odd_bytes(segment: str, world: World) -> None:
    client = Client()
    client.force_login(world.owner)
    base = reverse("ui:job_image", kwargs={"job_id": world.inference.id, "name": "n"})
    _assert_404(_get(client, base, "n", segment))
