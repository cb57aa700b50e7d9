"""A webhook hears only of what its owner may read through the API, for every event type
there is: the types come from `WebhookEvent`, so a type added later without a rule (and
an event of it made here) fails these tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from jobs.models import Job
from registry.models import ModelVersion, Stage
from registry.services import model_version_set_stage
from webhooks.models import Webhook, WebhookDelivery, WebhookEvent
from webhooks.services import EVENT_SOURCES, deliveries_enqueue


def a_job_of(user: User, admin: User) -> str:
    job = Job.objects.create(
        owner=user,
        kind="train",
        state="succeeded",
        finished_at=timezone.now() + timedelta(seconds=1),
    )
    return f"job:{job.id}"


def a_candidate_of_retired(user: User, admin: User) -> str:
    """`user`'s training registered a candidate, and an administrator retired it."""
    job = Job.objects.create(owner=user, kind="train", state="succeeded")
    version = ModelVersion.objects.create(
        name=f"{user.username}-secret-model",
        fingerprint=f"{user.pk:064d}",
        source="training",
        source_job=job,
        stage=Stage.CANDIDATE,
    )
    model_version_set_stage(actor=admin, version=version, stage=Stage.RETIRED, reason="leaky")
    return f"model-event:{version.events.get().id}"


# One event of each type, belonging to the user given.
HAPPENINGS: dict[str, Callable[[User, User], str]] = {
    WebhookEvent.JOB_FINISHED: a_job_of,
    WebhookEvent.MODEL_STAGE: a_candidate_of_retired,
}


def hook_of(user: User, event: str) -> Webhook:
    return Webhook.objects.create(
        owner=user, url="https://hooks.example.org/carril", events=[event], secret="s"
    )


def delivered_keys(hook: Webhook) -> set[str]:
    return set(WebhookDelivery.objects.filter(webhook=hook).values_list("event_key", flat=True))


def test_every_event_type_has_a_visibility_rule():
    assert set(EVENT_SOURCES) == set(WebhookEvent.values)
    assert set(HAPPENINGS) == set(WebhookEvent.values), "make an event of each type below"


@pytest.mark.parametrize("event", WebhookEvent.values)
def test_a_users_webhook_hears_of_their_own_events_and_never_of_another_users(
    event, owner, other, admin
):
    make = HAPPENINGS.get(event)
    assert make is not None, f"no event of type {event} is made in this test"
    mine, theirs = hook_of(owner, event), hook_of(other, event)
    own_key = make(owner, admin)
    other_key = make(other, admin)

    deliveries_enqueue()

    assert delivered_keys(mine) == {own_key}
    assert delivered_keys(theirs) == {other_key}
    for delivery in WebhookDelivery.objects.filter(webhook=mine):
        assert other.username not in str(delivery.payload), "nothing of the other user's"


@pytest.mark.parametrize("event", WebhookEvent.values)
def test_a_deactivated_users_webhook_hears_of_nothing(event, owner, admin):
    hook = hook_of(owner, event)
    HAPPENINGS[event](owner, admin)
    User.objects.filter(id=owner.id).update(is_active=False)
    deliveries_enqueue()
    assert delivered_keys(hook) == set()


def test_an_all_users_webhook_follows_the_jobs_its_owner_may_read_and_no_more(owner, admin):
    """`all_users` widens a hook from its owner's jobs to every job the owner may read: a
    registry administrator who is not staff reads only their own through the API."""
    hook = Webhook.objects.create(
        owner=admin,
        url="https://hooks.example.org/carril",
        events=[WebhookEvent.JOB_FINISHED],
        secret="s",
        all_users=True,
    )
    key = a_job_of(owner, admin)
    deliveries_enqueue()
    assert delivered_keys(hook) == set()

    User.objects.filter(id=admin.id).update(is_staff=True)
    deliveries_enqueue()
    assert delivered_keys(hook) == {key}
