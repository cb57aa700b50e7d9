"""A query parameter an operation does not declare is refused with 400 UNKNOWN_PARAMETER,
naming it and the ones the operation takes; every declared one is still accepted."""

from __future__ import annotations

import pytest
from api.query_params import declared_query_parameters, openapi_path
from jobs.models import Job


def list_routes() -> list[str]:
    """Every GET route of the API without a path parameter: the lists and singletons."""
    return sorted(
        path for path, method in declared_query_parameters() if method == "GET" and "{" not in path
    )


def test_the_api_has_list_routes_to_check():
    routes = list_routes()
    assert {"/api/v1/jobs/", "/api/v1/datasets/", "/api/v1/models/", "/api/v1/usage/"} <= set(
        routes
    )


@pytest.mark.parametrize("path", list_routes())
def test_every_list_route_refuses_a_parameter_it_does_not_declare(admin_api, path):
    response = admin_api.get(path, {"no_such_filter": "1"})
    assert response.status_code == 400, path
    error = response.json()["error"]
    assert error["code"] == "UNKNOWN_PARAMETER"
    assert "'no_such_filter'" in error["message"]
    accepted = sorted(declared_query_parameters()[(path, "GET")])
    assert error["details"] == {"unknown": ["no_such_filter"], "accepted": accepted}
    for name in accepted:
        assert name in error["message"]


def test_the_message_names_what_the_job_list_takes(owner_api):
    error = owner_api.get("/api/v1/jobs/?stat=running").json()["error"]
    assert error["message"].startswith("Unknown query parameter 'stat'; it takes ")
    assert {"cursor", "kind", "page_size", "state"} <= set(error["details"]["accepted"])


def test_an_operation_without_parameters_says_it_takes_none(owner_api, owner):
    job = Job.objects.create(owner=owner, kind="train", state="submitted")
    response = owner_api.get(f"/api/v1/jobs/{job.id}/?verbose=1")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "Unknown query parameter 'verbose'; it takes no query parameters."
    )


def test_a_post_with_an_unknown_parameter_is_refused_and_does_nothing(owner_api, owner):
    job = Job.objects.create(owner=owner, kind="train", state="submitted")
    response = owner_api.post(f"/api/v1/jobs/{job.id}/cancel/?force=1")
    assert response.status_code == 400
    job.refresh_from_db()
    assert job.state == "submitted"


def test_declared_parameters_are_accepted(owner_api, owner):
    for _ in range(3):
        Job.objects.create(owner=owner, kind="train", state="running")
    first = owner_api.get("/api/v1/jobs/?state=running&kind=train&page_size=2")
    assert first.status_code == 200
    # The cursor the list's own next link carries is a parameter like any other.
    assert owner_api.get(first.json()["next"]).status_code == 200
    assert owner_api.get("/api/v1/datasets/?page=1&page_size=5").status_code == 200
    assert owner_api.get("/api/v1/models/?stage=serving&page_size=5").status_code == 200
    assert owner_api.get("/api/v1/usage/?month=2026-03").status_code == 200


def test_the_error_comes_before_the_view_reads_the_database(owner_api, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert owner_api.get("/api/v1/models/?typo=1").status_code == 400


@pytest.mark.parametrize(
    ("route", "path"),
    [
        ("api/v1/jobs/", "/api/v1/jobs/"),
        ("api/v1/jobs/<uuid:job_id>/logs/", "/api/v1/jobs/{job_id}/logs/"),
        (
            "api/v1/datasets/<uuid:dataset_id>/images/<str:split>/<str:name>",
            "/api/v1/datasets/{dataset_id}/images/{split}/{name}",
        ),
        (
            "api/v1/jobs/<uuid:job_id>/artifacts/<path:relpath>",
            "/api/v1/jobs/{job_id}/artifacts/{relpath}",
        ),
    ],
)
def test_a_django_route_reads_as_its_openapi_path(route, path):
    assert openapi_path(route) == path
    assert (path, "GET") in declared_query_parameters()
