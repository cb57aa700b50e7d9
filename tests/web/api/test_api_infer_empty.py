"""An inference request with no body at all is refused as bad input, never a 500."""

from __future__ import annotations

from rest_framework.test import APIClient


def test_an_inference_request_without_a_body_is_a_400_naming_the_images(
    owner_api: APIClient, storage
) -> None:
    response = owner_api.post("/api/v1/jobs/infer/")

    assert response.status_code == 400, response.content
    assert "images" in response.json()["error"]["details"]["fields"]
