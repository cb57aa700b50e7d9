"""Who reaches what on the web app: every route, for anonymous, owner, another user, an
administrator (registry manager) and staff (who see every user's datasets and jobs).

Another user's dataset or job answers 404, exactly like a missing one, so ids cannot be
probed. A route added without a row here fails `test_the_matrix_covers_every_route`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from tests.security.conftest import World
from tests.support.routes import drf_routes

ROLES = ("anonymous", "owner", "other", "admin", "staff")


@dataclass(frozen=True)
class Route:
    name: str  # the URL name, namespaced
    method: str
    expect: dict[str, int]  # role -> status
    kwargs: Callable[[World], dict[str, Any]] = lambda w: {}
    data: Callable[[World], dict[str, Any]] | None = None
    multipart: bool = False
    api: bool = True  # DRF routes: clients authenticate per request, no session
    extra: dict[str, Any] = field(default_factory=dict)


def each(anonymous: int, owner: int, other: int, admin: int, staff: int) -> dict[str, int]:
    return dict(zip(ROLES, (anonymous, owner, other, admin, staff), strict=True))


def signed_in_everyone(status: int, *, anonymous: int = 401) -> dict[str, int]:
    return each(anonymous, status, status, status, status)


def owner_or_staff(status: int, *, anonymous: int = 401, hidden: int = 404) -> dict[str, int]:
    return each(anonymous, status, hidden, hidden, status)


def administrators(status: int, *, anonymous: int = 401, refused: int = 403) -> dict[str, int]:
    return each(anonymous, refused, refused, status, refused)


dataset_kw = lambda w: {"dataset_id": w.dataset.id}  # noqa: E731
training_kw = lambda w: {"job_id": w.training.id}  # noqa: E731
inference_kw = lambda w: {"job_id": w.inference.id}  # noqa: E731
version_kw = lambda w: {"version_id": w.version.id}  # noqa: E731
trained_kw = lambda w: {"version_id": w.trained.id}  # noqa: E731
retired_kw = lambda w: {"version_id": w.retired.id}  # noqa: E731
webhook_kw = lambda w: {"webhook_id": w.webhook_id}  # noqa: E731


def tenant(status: int, *, anonymous: int = 401, hidden: int = 404) -> dict[str, int]:
    """A model version the owner's training registered: the owner, administrators (who
    manage the registry) and staff see it; another user is told it does not exist."""
    return each(anonymous, status, hidden, status, status)


def an_image(w: World) -> dict[str, Any]:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.web import dataset_zips

    return {"images": [SimpleUploadedFile("a.png", dataset_zips.png())]}


API_ROUTES = [
    Route("api:token-obtain", "post", signed_in_everyone(400, anonymous=400), data=lambda w: {}),
    Route("api:tokens", "get", signed_in_everyone(200)),
    Route("api:tokens", "post", signed_in_everyone(201), data=lambda w: {"name": "ci"}),
    Route(
        "api:token-revoke",
        "delete",
        each(401, 204, 404, 404, 404),
        kwargs=lambda w: {"token_id": w.token_id},
    ),
    Route("api:webhooks", "get", signed_in_everyone(200)),
    Route("api:webhooks", "post", signed_in_everyone(400), data=lambda w: {}),
    Route("api:webhook-detail", "get", each(401, 200, 404, 404, 404), kwargs=webhook_kw),
    Route("api:webhook-detail", "delete", each(401, 204, 404, 404, 404), kwargs=webhook_kw),
    Route("api:webhook-deliveries", "get", each(401, 200, 404, 404, 404), kwargs=webhook_kw),
    Route(
        "api:webhook-redeliver",
        "post",
        each(401, 202, 404, 404, 404),
        kwargs=lambda w: {"webhook_id": w.webhook_id, "delivery_id": w.delivery_id},
    ),
    # Usage, cost and quotas (issue 16): everyone reads their own; administrators manage
    # other users' quotas.
    Route("api:usage", "get", signed_in_everyone(200)),
    Route("api:cost", "get", signed_in_everyone(200)),
    Route("api:quota-own", "get", signed_in_everyone(200)),
    Route(
        "api:quota-user",
        "get",
        administrators(200),
        kwargs=lambda w: {"username": w.owner.username},
    ),
    Route(
        "api:quota-user",
        "put",
        administrators(200),
        kwargs=lambda w: {"username": w.owner.username},
        data=lambda w: {"max_gpus": 4},
    ),
    Route("api:datasets", "get", signed_in_everyone(200)),
    Route("api:datasets", "post", signed_in_everyone(400), data=lambda w: {}, multipart=True),
    Route("api:dataset-detail", "get", owner_or_staff(200), kwargs=dataset_kw),
    # 409: the owner's running training still uses it; reaching the rule proves access.
    Route("api:dataset-detail", "delete", owner_or_staff(409), kwargs=dataset_kw),
    Route("api:dataset-samples", "get", owner_or_staff(200), kwargs=dataset_kw),
    Route(
        "api:dataset-image",
        "get",
        owner_or_staff(200),
        kwargs=lambda w: {"dataset_id": w.dataset.id, "split": "train", "name": "a.png"},
    ),
    Route("api:models", "get", signed_in_everyone(200)),
    Route("api:model-import", "post", administrators(400), data=lambda w: {}, multipart=True),
    Route("api:model-detail", "get", signed_in_everyone(200), kwargs=version_kw),
    Route("api:model-detail", "get", tenant(200), kwargs=trained_kw),
    Route("api:model-detail", "get", tenant(200), kwargs=retired_kw),
    # Inference from the owner's candidate: another user is told it does not exist.
    Route(
        "api:job-infer",
        "post",
        tenant(202),
        data=lambda w: {**an_image(w), "model_version": str(w.trained.id)},
        multipart=True,
    ),
    Route(
        "api:model-stage",
        "post",
        administrators(200),
        kwargs=version_kw,
        data=lambda w: {"stage": "serving", "reason": "better mAP on the holdout"},
    ),
    # Downloads and exports (issue 14): whoever may see the version; another user's
    # candidate is a 404; only administrators choose the serving format.
    Route("api:model-download", "get", signed_in_everyone(200), kwargs=version_kw),
    Route("api:model-download", "get", tenant(200), kwargs=trained_kw),
    Route("api:model-exports", "get", signed_in_everyone(200), kwargs=version_kw),
    Route("api:model-exports", "get", tenant(200), kwargs=trained_kw),
    Route(
        "api:model-export",
        "post",
        tenant(202),
        kwargs=trained_kw,
        data=lambda w: {"format": "onnx"},
    ),
    Route(
        "api:model-serving-format",
        "post",
        administrators(200),
        kwargs=version_kw,
        data=lambda w: {"format": "pt"},
    ),
    Route("api:jobs", "get", signed_in_everyone(200)),
    # Fine-tuning the owner's candidate on the owner's dataset: only who may see both.
    Route(
        "api:job-train",
        "post",
        owner_or_staff(202, hidden=400),
        data=lambda w: {"dataset": str(w.dataset.id), "model": str(w.trained.id), "imgsz": 64},
    ),
    # Another user naming the owner's dataset is told it does not exist.
    Route(
        "api:job-train",
        "post",
        owner_or_staff(202, hidden=400),
        data=lambda w: {"dataset": str(w.dataset.id), "model": "yolov8n", "imgsz": 64},
    ),
    Route("api:job-infer", "post", signed_in_everyone(400), data=lambda w: {}, multipart=True),
    # Evaluating the owner's candidate on the owner's dataset: only who may see both.
    Route(
        "api:job-evaluate",
        "post",
        owner_or_staff(202, hidden=400),
        data=lambda w: {"model_version": str(w.trained.id), "dataset": str(w.dataset.id)},
    ),
    Route("api:job-evaluate", "post", signed_in_everyone(400), data=lambda w: {}),
    Route("api:job-evaluation", "get", owner_or_staff(200), kwargs=training_kw),
    Route("api:job-detail", "get", owner_or_staff(200), kwargs=training_kw),
    # Renaming is the owner's alone: staff see the job but may not relabel it.
    Route(
        "api:job-detail",
        "patch",
        each(401, 200, 404, 404, 403),
        kwargs=training_kw,
        data=lambda w: {"name": "renamed"},
    ),
    # Without ids; tests/web/api/test_api_job_labels_and_sorting.py compares real runs.
    Route("api:jobs-compare", "get", signed_in_everyone(400)),
    Route("api:job-cancel", "post", owner_or_staff(202), kwargs=training_kw),
    Route("api:job-logs", "get", owner_or_staff(200), kwargs=training_kw),
    Route("api:job-detections", "get", owner_or_staff(200), kwargs=inference_kw),
    Route(
        "api:job-artifact",
        "get",
        owner_or_staff(200),
        kwargs=lambda w: {"job_id": w.training.id, "relpath": "results.json"},
    ),
    Route("api:gpus", "get", signed_in_everyone(200)),
]

# Django views outside /api/v1/: sessions, so anonymous visitors are sent to sign in.
SIGN_IN = 302
PAGE_ROUTES = [
    Route("api-schema", "get", signed_in_everyone(200, anonymous=200), api=False),
    Route("api-docs", "get", signed_in_everyone(200, anonymous=200), api=False),
    Route("healthz", "get", signed_in_everyone(200, anonymous=200), api=False),
    Route("metrics", "get", signed_in_everyone(200, anonymous=200), api=False),
    Route("admin:index", "get", each(302, 302, 302, 302, 200), api=False),
    Route("ui:login", "get", signed_in_everyone(302, anonymous=200), api=False),
    Route(
        "ui:logout", "post", signed_in_everyone(302, anonymous=302), data=lambda w: {}, api=False
    ),
    Route("ui:dashboard", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route("ui:dashboard_status", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route("ui:datasets", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route(
        "ui:dataset_detail", "get", owner_or_staff(200, anonymous=SIGN_IN), dataset_kw, api=False
    ),
    Route(
        "ui:dataset_image",
        "get",
        owner_or_staff(200, anonymous=SIGN_IN),
        kwargs=lambda w: {"dataset_id": w.dataset.id, "split": "train", "name": "a.png"},
        api=False,
    ),
    Route(
        "ui:dataset_delete",
        "post",
        owner_or_staff(302, anonymous=SIGN_IN),
        dataset_kw,
        data=lambda w: {},
        api=False,
    ),
    Route("ui:train_new", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route("ui:jobs", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route("ui:job_detail", "get", owner_or_staff(200, anonymous=SIGN_IN), training_kw, api=False),
    Route("ui:job_status", "get", owner_or_staff(200, anonymous=SIGN_IN), training_kw, api=False),
    # A running training has no evaluation yet: the page says so (200) to who may see it.
    Route(
        "ui:job_evaluation", "get", owner_or_staff(200, anonymous=SIGN_IN), training_kw, api=False
    ),
    # Without ids the compare page explains what to choose (400) to anyone signed in.
    Route("ui:jobs_compare", "get", signed_in_everyone(400, anonymous=SIGN_IN), api=False),
    # Staff see the job but only its owner relabels it (redirected back with a message).
    Route(
        "ui:job_labels",
        "post",
        owner_or_staff(302, anonymous=SIGN_IN),
        training_kw,
        data=lambda w: {"name": "renamed"},
        api=False,
    ),
    # A running training is not run again (a message on its page); who may see it is told so.
    Route(
        "ui:job_run_again",
        "post",
        owner_or_staff(302, anonymous=SIGN_IN),
        training_kw,
        data=lambda w: {},
        api=False,
    ),
    Route(
        "ui:job_cancel",
        "post",
        owner_or_staff(302, anonymous=SIGN_IN),
        training_kw,
        data=lambda w: {},
        api=False,
    ),
    Route(
        "ui:job_image",
        "get",
        owner_or_staff(200, anonymous=SIGN_IN),
        kwargs=lambda w: {"job_id": w.inference.id, "name": "0000_a.png"},
        api=False,
    ),
    Route(
        "ui:job_detections", "get", owner_or_staff(200, anonymous=SIGN_IN), inference_kw, api=False
    ),
    Route("ui:infer_new", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route(
        "ui:evaluation_new",
        "get",
        signed_in_everyone(200, anonymous=SIGN_IN),
        version_kw,
        api=False,
    ),
    Route("ui:evaluation_new", "get", tenant(200, anonymous=SIGN_IN), trained_kw, api=False),
    Route("ui:models", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    # A version's page and its weights: another user's candidate or retired version is a
    # 404, like a missing one (registry/visibility.py); an imported one is everyone's.
    Route(
        "ui:model_version", "get", signed_in_everyone(200, anonymous=SIGN_IN), version_kw, api=False
    ),
    Route("ui:model_version", "get", tenant(200, anonymous=SIGN_IN), trained_kw, api=False),
    Route("ui:model_version", "get", tenant(200, anonymous=SIGN_IN), retired_kw, api=False),
    Route(
        "ui:model_weights", "get", signed_in_everyone(200, anonymous=SIGN_IN), version_kw, api=False
    ),
    Route("ui:model_weights", "get", tenant(200, anonymous=SIGN_IN), trained_kw, api=False),
    Route("ui:model_weights", "get", tenant(200, anonymous=SIGN_IN), retired_kw, api=False),
    Route("ui:account", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route(
        "ui:model_download",
        "get",
        signed_in_everyone(200, anonymous=SIGN_IN),
        version_kw,
        api=False,
    ),
    Route("ui:model_download", "get", tenant(200, anonymous=SIGN_IN), trained_kw, api=False),
    Route(
        "ui:model_export",
        "post",
        tenant(302, anonymous=SIGN_IN),
        trained_kw,
        data=lambda w: {"format": "onnx"},
        api=False,
    ),
    Route(
        "ui:model_serving_format",
        "post",
        signed_in_everyone(302, anonymous=SIGN_IN),
        version_kw,
        data=lambda w: {"format": "pt"},
        api=False,
    ),
    Route(
        "ui:job_file",
        "get",
        owner_or_staff(200, anonymous=SIGN_IN),
        kwargs=lambda w: {"job_id": w.training.id, "relpath": "results.json"},
        api=False,
    ),
    Route("ui:usage", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route("ui:cost", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route("ui:storage", "get", administrators(200, anonymous=SIGN_IN), api=False),
    Route("ui:webhooks", "get", signed_in_everyone(200, anonymous=SIGN_IN), api=False),
    Route(
        "ui:webhook_new",
        "post",
        signed_in_everyone(400, anonymous=SIGN_IN),
        data=lambda w: {},
        api=False,
    ),
    Route(
        "ui:webhook_redeliver",
        "post",
        each(SIGN_IN, 302, 404, 404, 404),
        kwargs=lambda w: {"delivery_id": w.delivery_id},
        data=lambda w: {},
        api=False,
    ),
    Route(
        "ui:webhook_delete",
        "post",
        each(SIGN_IN, 302, 404, 404, 404),
        kwargs=webhook_kw,
        data=lambda w: {},
        api=False,
    ),
    Route(
        "ui:token_create",
        "post",
        signed_in_everyone(200, anonymous=SIGN_IN),
        data=lambda w: {"name": "laptop"},
        api=False,
    ),
    Route(
        "ui:token_revoke",
        "post",
        each(SIGN_IN, 302, 404, 404, 404),
        kwargs=lambda w: {"token_id": w.token_id},
        data=lambda w: {},
        api=False,
    ),
    # Everyone signed in is sent back to the list; only administrators change the stage
    # (checked below).
    # Another user's candidate is a 404 page; the others reach the stage rule.
    Route(
        "ui:model_stage",
        "post",
        tenant(302, anonymous=SIGN_IN),
        trained_kw,
        data=lambda w: {"stage": "serving", "reason": "r"},
        api=False,
    ),
    Route(
        "ui:model_stage",
        "post",
        signed_in_everyone(302, anonymous=SIGN_IN),
        version_kw,
        data=lambda w: {"stage": "serving", "reason": "r"},
        api=False,
    ),
]

ROUTES = API_ROUTES + PAGE_ROUTES


def _user_for(role: str, users: dict[str, User]) -> User | None:
    return None if role == "anonymous" else users[role]


def _client(route: Route, user: User | None) -> Client | APIClient:
    if route.api:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _call(route: Route, client: Client | APIClient, world: World):
    url = reverse(route.name, kwargs=route.kwargs(world))
    data = route.data(world) if route.data else None
    if route.api and data is not None and not route.multipart:
        return getattr(client, route.method)(url, data, format="json")
    if data is not None:
        return getattr(client, route.method)(url, data)
    return getattr(client, route.method)(url)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", ROUTES, ids=[f"{r.method.upper()} {r.name}" for r in ROUTES])
def test_each_role_gets_what_the_matrix_says_on_every_route(
    route: Route, role: str, world: World, users: dict[str, User], fake_gpu
) -> None:
    response = _call(route, _client(route, _user_for(role, users)), world)
    assert response.status_code == route.expect[role], getattr(response, "content", b"")[:500]
    if (
        route.api
        and response.status_code >= 400
        and response["Content-Type"].startswith("application/json")
    ):
        error = response.json()["error"]
        assert error["code"]
        assert error["message"]
    if not route.api and role == "anonymous" and route.expect[role] == SIGN_IN:
        assert response["Location"].split("?")[0].endswith("/login/")


def _route_names(patterns: list, prefix: str = "") -> set[str]:
    names: set[str] = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                names.add("admin:index")  # Django's own admin: its index stands for it
                continue
            inner = f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix
            names |= _route_names(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            names.add(f"{prefix}{pattern.name}")
    return names


def test_the_matrix_covers_every_route() -> None:
    assert _route_names(get_resolver().url_patterns) == {route.name for route in ROUTES}


def test_the_matrix_covers_every_method_of_every_api_route() -> None:
    walked = {(route.name, method) for route in drf_routes() for method in route.methods}
    assert walked - {(route.name, route.method) for route in ROUTES} == set()


# --- what each role sees in lists -------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "sees"), [("owner", True), ("other", False), ("admin", False), ("staff", True)]
)
@pytest.mark.parametrize("list_name", ["api:datasets", "api:jobs"])
def test_lists_show_the_owners_records_only_to_the_owner_and_staff(
    list_name: str, role: str, sees: bool, world: World, users: dict[str, User]
) -> None:
    client = APIClient()
    client.force_authenticate(users[role])
    ids = {row["id"] for row in client.get(reverse(list_name)).json()["results"]}
    owners = {str(world.dataset.id)} if list_name == "api:datasets" else {str(world.training.id)}
    assert (owners <= ids) is sees


@pytest.mark.parametrize("role", ["other", "admin", "staff"])
def test_nobody_lists_another_users_api_tokens(role: str, world: World, users) -> None:
    client = APIClient()
    client.force_authenticate(users[role])
    assert world.token_id not in {row["id"] for row in client.get(reverse("api:tokens")).json()}


@pytest.mark.parametrize("header", ["Token nope", "Token crl_wrong", "Token", "Bearer x"])
def test_a_wrong_api_token_is_refused_with_401(header: str, world: World) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get(reverse("api:jobs"))
    assert response.status_code == 401
    assert response.json()["error"]["code"]


@pytest.mark.parametrize(("role", "changes"), [("owner", False), ("staff", False), ("admin", True)])
def test_only_an_administrator_changes_a_stage_from_the_ui(
    role: str, changes: bool, world: World, users
) -> None:
    client = Client()
    client.force_login(users[role])
    client.post(
        reverse("ui:model_stage", args=[world.version.id]), {"stage": "serving", "reason": "r"}
    )
    world.version.refresh_from_db()
    assert (world.version.stage == "serving") is changes


def test_the_ui_refuses_to_delete_a_dataset_a_running_job_uses(world: World) -> None:
    client = Client()
    client.force_login(world.owner)
    client.post(reverse("ui:dataset_delete", args=[world.dataset.id]))
    assert world.dataset.path.is_dir()
