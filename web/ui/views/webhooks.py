"""The webhooks page: register a URL (its secret shown once), read each webhook's
delivery log with status codes, redeliver, delete."""

from __future__ import annotations

from carril_web.errors import CarrilWebError, NotFound
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from webhooks.models import WebhookDelivery, WebhookEvent
from webhooks.services import delivery_redeliver, webhook_create, webhooks_visible_to

from ui.pages import render_page


def _render(
    request: HttpRequest, *, secret: str | None = None, error: str = "", status: int = 200
) -> HttpResponse:
    hooks = list(webhooks_visible_to(user=request.user))
    for hook in hooks:
        hook.recent = list(hook.deliveries.all()[:20])
    return render_page(
        request,
        "ui/webhooks.html",
        {"webhooks": hooks, "new_secret": secret, "error": error, "events": WebhookEvent.choices},
        section="account",
        status=status,
    )


@login_required
@require_GET
def webhook_list(request: HttpRequest) -> HttpResponse:
    return _render(request)


@login_required
@require_POST
@never_cache
def webhook_new(request: HttpRequest) -> HttpResponse:
    try:
        _, secret = webhook_create(
            actor=request.user,
            url=request.POST.get("url", "").strip(),
            events=request.POST.getlist("events"),
            all_users=request.POST.get("all_users") == "on",
            allow_private=request.POST.get("allow_private") == "on",
        )
    except CarrilWebError as exc:
        fields = exc.details.get("fields") or {}
        reason = "; ".join(f"{k}: {' '.join(v)}" for k, v in fields.items()) or exc.message
        return _render(request, error=reason, status=exc.status)
    # Rendered, not redirected: the secret exists only in this one response.
    return _render(request, secret=secret)


@login_required
@require_POST
def webhook_redeliver(request: HttpRequest, delivery_id: int) -> HttpResponse:
    delivery = WebhookDelivery.objects.filter(
        id=delivery_id, webhook__in=webhooks_visible_to(user=request.user)
    ).first()
    if delivery is None:
        raise NotFound()
    delivery_redeliver(delivery=delivery)
    messages.success(request, f"Delivery {delivery.id} will be sent again shortly.")
    return redirect("ui:webhooks")


@login_required
@require_POST
def webhook_delete(request: HttpRequest, webhook_id: int) -> HttpResponse:
    hook = webhooks_visible_to(user=request.user).filter(id=webhook_id).first()
    if hook is None:
        raise NotFound()
    hook.delete()
    messages.success(request, "Webhook deleted.")
    return redirect("ui:webhooks")
