"""Webhooks: register, enqueue what happened, send with signature and backoff, redeliver.

Events are found, not pushed: each reconciler pass looks at jobs that ended and stage
changes of the last `LOOKBACK` and writes one delivery per (webhook, event) - a unique
constraint makes that idempotent across passes and reconcilers. Sending happens in the
same pass, after the jobs' own work, within a time budget (ADR 0040), so a slow or dead
receiver never holds a job back.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from accounts.services import user_is_administrator
from carril_web.errors import Forbidden, ValidationFailed
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from webhooks.addresses import AddressRefused, url_check, url_pin
from webhooks.models import DeliveryState, Webhook, WebhookDelivery, WebhookEvent

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Carril-Signature"  # "sha256=<hex HMAC-SHA256 of the raw body>"
LOOKBACK = timedelta(hours=1)
MAX_ATTEMPTS = 8
FIRST_RETRY_S = 2.0
MAX_RETRY_S = 3600.0
CALL_TIMEOUT_S = 3.0
PASS_BUDGET_S = 3.0


def signature(*, secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def webhook_create(
    *,
    actor: AbstractBaseUser,
    url: str,
    events: list[str],
    all_users: bool = False,
    allow_private: bool = False,
) -> tuple[Webhook, str]:
    """A webhook and its secret (the only time the secret is handed out)."""
    administrator = user_is_administrator(user=actor)
    if (all_users or allow_private) and not administrator:
        raise Forbidden("Only administrators follow everyone's jobs or allow private addresses.")
    unknown = sorted(set(events) - set(WebhookEvent.values))
    if not events or unknown:
        raise ValidationFailed(details={"fields": {"events": [f"Some of {WebhookEvent.values}."]}})
    try:
        url_check(url, allow_private=allow_private)
    except AddressRefused as exc:
        raise ValidationFailed(str(exc), details={"fields": {"url": [str(exc)]}}) from exc
    secret = secrets.token_urlsafe(32)
    webhook = Webhook.objects.create(
        owner=actor,
        url=url,
        events=sorted(set(events)),
        secret=secret,
        all_users=all_users,
        allow_private=allow_private,
    )
    return webhook, secret


def webhooks_visible_to(*, user: AbstractBaseUser):
    return Webhook.objects.filter(owner=user)


def delivery_redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send it again on the next pass, with a fresh count of attempts."""
    WebhookDelivery.objects.filter(id=delivery.id).update(
        state=DeliveryState.PENDING, attempts=0, next_attempt_at=timezone.now(), last_error=""
    )
    delivery.refresh_from_db()
    return delivery


# --- finding what happened --------------------------------------------------------------
@dataclass(frozen=True)
class Occurrence:
    """One event a webhook may be told of: its key (one delivery per webhook and key),
    when it happened, and the payload's data."""

    key: str
    at: datetime
    data: dict[str, Any]


def _jobs_finished_seen_by(*, hook: Webhook, since: datetime) -> Iterator[Occurrence]:
    """Jobs that ended, as the jobs API shows them to the hook's owner; only the owner's
    own unless `all_users` widens it to every job the owner may read."""
    from jobs.models import TERMINAL_STATES
    from jobs.selectors import jobs_visible_to

    jobs = jobs_visible_to(user=hook.owner).filter(
        state__in=TERMINAL_STATES, finished_at__gte=since
    )
    if not hook.all_users:
        jobs = jobs.filter(owner=hook.owner)
    for job in jobs:
        yield Occurrence(key=f"job:{job.id}", at=job.finished_at, data=_job(job))


def _stage_changes_seen_by(*, hook: Webhook, since: datetime) -> Iterator[Occurrence]:
    """Stage changes of the model versions the registry lets the hook's owner see."""
    from registry.selectors import model_events_visible_to

    events = model_events_visible_to(user=hook.owner).filter(created_at__gte=since)
    for event in events.exclude(from_stage=""):
        yield Occurrence(key=f"model-event:{event.id}", at=event.created_at, data=_stage(event))


# Every event type, and the events of it a webhook may hear of. Each source reads through
# the selector the API uses for that object, for the webhook's owner: a webhook is never
# told what its owner could not read (a type without an entry here is never delivered).
EVENT_SOURCES: dict[str, Callable[..., Iterator[Occurrence]]] = {
    WebhookEvent.JOB_FINISHED: _jobs_finished_seen_by,
    WebhookEvent.MODEL_STAGE: _stage_changes_seen_by,
}


def deliveries_enqueue(*, now=None) -> int:
    """One delivery per active webhook and event of the last LOOKBACK that the webhook's
    owner may see; returns how many new rows it wrote (at most; the unique constraint
    drops a concurrent pass's repeats)."""
    now = now or timezone.now()
    since = now - LOOKBACK
    # A deactivated owner can no longer read anything through the API; nor do their hooks.
    hooks = list(Webhook.objects.filter(active=True, owner__is_active=True).select_related("owner"))
    if not hooks:
        return 0
    rows: list[WebhookDelivery] = []
    for hook in hooks:
        for event in hook.events:
            source = EVENT_SOURCES.get(event)
            if source is None:
                continue
            for occurrence in source(hook=hook, since=since):
                if hook.created_at <= occurrence.at:
                    rows.append(_delivery(hook, event, occurrence.key, occurrence.data))
    # Skip what earlier passes wrote; the unique constraint still settles any race.
    known = set(
        WebhookDelivery.objects.filter(
            webhook__in=hooks, created_at__gte=since - LOOKBACK
        ).values_list("webhook_id", "event_key")
    )
    rows = [row for row in rows if (row.webhook_id, row.event_key) not in known]
    WebhookDelivery.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def _delivery(hook: Webhook, event: str, key: str, data: dict[str, Any]) -> WebhookDelivery:
    return WebhookDelivery(
        webhook=hook,
        event=event,
        event_key=key,
        payload={"event": event, "data": data},
        next_attempt_at=timezone.now(),
    )


def _job(job) -> dict[str, Any]:
    return {
        "id": str(job.id),
        "kind": str(job.kind),
        "state": str(job.state),
        "owner": job.owner.get_username(),
        "error": {"code": job.error_code, "message": job.error_message} if job.error_code else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "url": f"/api/v1/jobs/{job.id}/",
    }


def _stage(event) -> dict[str, Any]:
    return {
        "model_version": str(event.model_version_id),
        "name": event.model_version.name,
        "action": str(event.action),
        "from_stage": str(event.from_stage),
        "to_stage": str(event.to_stage),
        "reason": event.reason,
        "actor": event.actor.get_username() if event.actor else None,
        "at": event.created_at.isoformat(),
    }


# --- sending ----------------------------------------------------------------------------
def deliveries_send_due(*, budget_s: float = PASS_BUDGET_S, client: httpx.Client | None = None):
    """Send due deliveries until the budget is spent; returns how many were tried."""
    deadline = time.monotonic() + budget_s
    tried = 0
    own = client is None
    # No kept-alive connections: each call goes to the address pinned for it, and a TLS
    # connection made for one name must not carry a call meant for another at that address.
    client = client or httpx.Client(
        timeout=CALL_TIMEOUT_S,
        follow_redirects=False,
        limits=httpx.Limits(max_keepalive_connections=0),
    )
    try:
        due = (
            WebhookDelivery.objects.filter(
                state=DeliveryState.PENDING, next_attempt_at__lte=timezone.now()
            )
            .select_related("webhook")
            .order_by("next_attempt_at")[:50]
        )
        for delivery in due:
            if time.monotonic() >= deadline:
                break
            _send_one(delivery=delivery, client=client)
            tried += 1
    finally:
        if own:
            client.close()
    return tried


def _send_one(*, delivery: WebhookDelivery, client: httpx.Client) -> None:
    hook = delivery.webhook
    body = json.dumps(
        {**delivery.payload, "delivery": delivery.id, "sent_at": timezone.now().isoformat()},
        separators=(",", ":"),
    ).encode()
    status_code: int | None = None
    error = ""
    try:
        # Connect to the address checked, not to a second lookup of the name (rebinding).
        pinned = url_pin(hook.url, allow_private=hook.allow_private)
        response = client.post(
            pinned.url,
            content=body,
            extensions=pinned.extensions,
            headers={
                **pinned.headers,
                "Content-Type": "application/json",
                "User-Agent": "carril-webhooks",
                "X-Carril-Event": delivery.event,
                "X-Carril-Delivery": str(delivery.id),
                SIGNATURE_HEADER: signature(secret=hook.secret, body=body),
            },
        )
        status_code = response.status_code
        if not 200 <= status_code < 300:
            error = f"HTTP {status_code}"
    except AddressRefused as exc:
        error = str(exc)
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    attempts = delivery.attempts + 1
    now = timezone.now()
    fields: dict[str, Any] = {"attempts": attempts, "last_status_code": status_code}
    if not error:
        fields |= {"state": DeliveryState.DELIVERED, "delivered_at": now, "last_error": ""}
    elif attempts >= MAX_ATTEMPTS:
        fields |= {"state": DeliveryState.FAILED, "last_error": error}
    else:
        wait = min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** (attempts - 1))
        fields |= {"next_attempt_at": now + timedelta(seconds=wait), "last_error": error}
    WebhookDelivery.objects.filter(id=delivery.id, state=DeliveryState.PENDING).update(**fields)
    if error:
        logger.warning("webhook %s delivery %s: %s", hook.id, delivery.id, error)


def webhooks_pass() -> None:
    """What the reconciler calls after its own work in each pass; never raises."""
    try:
        deliveries_enqueue()
        deliveries_send_due()
    except Exception:  # a webhook problem must not stop the reconciler
        logger.exception("webhook pass failed")
