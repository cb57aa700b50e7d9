"""What every page's template needs besides its own context."""

from __future__ import annotations

import uuid
from typing import Any

from accounts.services import user_is_administrator, user_sees_everything
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def render_page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any] | None = None,
    *,
    section: str,
    status: int = 200,
) -> HttpResponse:
    page_context = {
        "nav_section": section,
        "is_registry_admin": user_is_administrator(user=request.user),
        "sees_everything": user_sees_everything(user=request.user),
    }
    page_context.update(context or {})
    return render(request, template, page_context, status=status)


# Stands in for a record's id in a URL reversed before the record exists (upload forms
# redirect to the new record's page; the script swaps the real id in).
PLACEHOLDER_ID = uuid.UUID(int=0)
