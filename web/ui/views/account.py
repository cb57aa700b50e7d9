"""The account page: API tokens, each shown once when created, and revocable."""

from __future__ import annotations

from accounts.models import ApiToken
from accounts.services import api_token_create, api_token_revoke
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from ui.pages import render_page


def _render(request: HttpRequest, *, secret: str | None = None) -> HttpResponse:
    return render_page(
        request,
        "ui/account.html",
        {
            "tokens": ApiToken.objects.filter(user=request.user).order_by("-created_at"),
            "new_secret": secret,
        },
        section="account",
    )


@login_required
@require_GET
def account(request: HttpRequest) -> HttpResponse:
    return _render(request)


@login_required
@require_POST
@never_cache
def token_create(request: HttpRequest) -> HttpResponse:
    # Rendered, not redirected: the secret exists only in this one response.
    issued = api_token_create(user=request.user, name=request.POST.get("name", ""))
    return _render(request, secret=issued.secret)


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    token = api_token_revoke(user=request.user, token_id=token_id)
    messages.success(request, f"Revoked token {token.prefix}….")
    return redirect("ui:account")
