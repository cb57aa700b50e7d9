"""Webhooks over real HTTP to a receiver on 127.0.0.1 (allowed by an administrator): a
job's end is delivered once, signed with the secret shown at creation; a failed call is
retried with backoff; redelivery sends it again; private addresses are refused otherwise."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from jobs.models import Job
from webhooks.models import WebhookDelivery
from webhooks.services import deliveries_enqueue, deliveries_send_due, webhooks_pass

from tests.support.webhook_receiver import Receiver


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def register(api, url, **extra):
    body = {"url": url, "events": ["job.finished", "model.stage_changed"], **extra}
    return api.post("/api/v1/webhooks/", body, format="json")


def job_ended(owner, state="succeeded") -> Job:
    return Job.objects.create(
        owner=owner, kind="train", state=state, finished_at=timezone.now() + timedelta(seconds=1)
    )


def test_a_finished_job_is_delivered_once_and_verified_by_its_signature(
    admin, admin_api, owner, receiver
):
    # `all_users` follows every job its owner may read: a staff administrator's, all.
    User.objects.filter(id=admin.id).update(is_staff=True)
    created = register(admin_api, receiver.url, all_users=True, allow_private=True)
    assert created.status_code == 201, created.content
    secret = created.json()["secret"]
    assert "secret" not in admin_api.get("/api/v1/webhooks/").json()[0], "shown once"
    job = job_ended(owner)

    webhooks_pass()
    webhooks_pass()  # a second pass (or reconciler) sends nothing again
    assert deliveries_enqueue() == 0, "nor writes the delivery again"

    assert len(receiver.calls) == 1
    headers, body = receiver.calls[0]
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Carril-Signature"], expected)
    document = json.loads(body)
    assert document["event"] == "job.finished"
    assert document["data"]["id"] == str(job.id)
    assert document["data"]["state"] == "succeeded"
    log = admin_api.get(f"/api/v1/webhooks/{created.json()['id']}/deliveries/").json()
    assert [(d["state"], d["last_status_code"]) for d in log] == [("delivered", 200)]


def test_a_failed_delivery_is_retried_with_backoff_and_can_be_redelivered(
    admin_api, admin, receiver
):
    hook = register(admin_api, receiver.url, allow_private=True).json()
    receiver.answers = [500]
    job_ended(admin, state="failed")
    deliveries_enqueue()
    deliveries_send_due()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.attempts, delivery.last_status_code) == ("pending", 1, 500)
    assert delivery.next_attempt_at > timezone.now(), "backs off before the retry"
    assert deliveries_send_due() == 0, "not before its time"

    WebhookDelivery.objects.update(next_attempt_at=timezone.now())
    deliveries_send_due()
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status_code) == ("delivered", 2, 200)
    assert len(receiver.calls) == 2
    assert json.loads(receiver.calls[1][1])["delivery"] == delivery.id

    again = admin_api.post(f"/api/v1/webhooks/{hook['id']}/deliveries/{delivery.id}/redeliver/")
    assert again.status_code == 202
    deliveries_send_due()
    assert len(receiver.calls) == 3


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/x", "http://10.1.2.3/x", "http://[::1]/x", "ftp://example.org/"]
)
def test_loopback_private_and_non_http_urls_are_refused_without_an_administrators_allowance(
    owner_api, url
):
    response = register(owner_api, url)
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"]["url"]


def test_only_an_administrator_may_allow_private_addresses(owner_api, receiver):
    assert register(owner_api, receiver.url, allow_private=True).status_code == 403


def test_another_users_job_is_not_sent_to_a_users_webhook(other, receiver, admin_api):
    # An ordinary user's webhook on a public name would be needed here; the allowance is
    # an administrator's, so the administrator's own non-all-users hook stands in for it.
    register(admin_api, receiver.url, allow_private=True)
    job_ended(other)
    webhooks_pass()
    assert receiver.calls == []


def test_the_webhooks_page_shows_the_status_codes_and_redelivers(client, admin, receiver):
    client.force_login(admin)
    page = client.post(
        "/account/webhooks/new/",
        {"url": receiver.url, "events": ["job.finished"], "allow_private": "on"},
    )
    assert page.status_code == 200
    assert b"new-webhook-secret" in page.content
    receiver.answers = [503]
    job_ended(admin)
    webhooks_pass()
    log = client.get("/account/webhooks/")
    assert b"<td>503</td>" in log.content
    delivery = WebhookDelivery.objects.get()
    WebhookDelivery.objects.update(state="failed")
    assert client.post(f"/account/webhooks/deliveries/{delivery.id}/redeliver/").status_code == 302
    deliveries_send_due()
    delivery.refresh_from_db()
    assert (delivery.state, delivery.last_status_code) == ("delivered", 200)
