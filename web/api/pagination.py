"""Page a queryset the way the API's lists page.

Datasets and models: page numbers, `{count, next, previous, results}`. The job list,
which grows without bound, pages by keyset (issue 18): `{next, previous, results}`, the
links carrying an opaque `cursor`; a deep page costs what the first does (an indexed
`created_at < position` instead of an OFFSET), and there is no `count` (counting every
row on every page is the cost that grows).
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from typing import Any

from carril_web.errors import ValidationFailed
from django.db.models import F, FloatField, Q, QuerySet, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce
from django.http import HttpRequest
from django.utils.dateparse import parse_datetime
from jobs.run_metrics import METRIC_KEYS
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination, PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.utils.urls import remove_query_param, replace_query_param
from rest_framework.views import APIView


class Pages(PageNumberPagination):
    page_size = 25
    page_size_query_param = "page_size"
    max_page_size = 200


def _cursor_refused() -> ValidationFailed:
    """A cursor this list did not give out is a bad parameter (400, docs/api-errors.md),
    not a missing record."""
    return ValidationFailed(
        "The cursor is not one this list gave out.",
        details={"fields": {"cursor": ["Use the next or previous link as it is."]}},
    )


class NewestFirst(CursorPagination):
    """Keyset pages of a list ordered by creation, newest first."""

    page_size = 25
    page_size_query_param = "page_size"
    max_page_size = 200
    ordering = "-created_at"

    def decode_cursor(self, request: Request) -> Cursor | None:
        # DRF answers an undecodable cursor 404, and one whose position is not a time
        # reached the database filter and answered 500.
        try:
            cursor = super().decode_cursor(request)
        except NotFound as exc:
            raise _cursor_refused() from exc
        if cursor is not None and cursor.position is not None:
            try:
                when = parse_datetime(cursor.position)
            except ValueError:
                when = None
            if when is None:
                raise _cursor_refused()
        return cursor


# `sort=` values the job list takes: a final metric, highest first with "-".
METRIC_SORTS = [f"{sign}{key}" for key in METRIC_KEYS for sign in ("-", "")]


class ByMetric:
    """Keyset pages of jobs ordered by a final metric (ADR 0044).

    Ordered by (metric, id), both in the sort's direction, so the order is total even
    where runs tie; the cursor carries the page edge's pair, and the next page is the
    rows strictly after it. A job without the metric (an inference, a training still
    running) sorts last either way: its value is read as one outside 0..1.
    Same envelope as `NewestFirst`: `{next, previous, results}`.
    """

    page_size = 25
    max_page_size = 200

    def __init__(self, *, sort: str) -> None:
        if sort not in METRIC_SORTS:
            raise ValidationFailed(
                f"Unknown sort {sort!r}.", details={"fields": {"sort": [f"One of {METRIC_SORTS}."]}}
            )
        self.sort = sort
        self.key = sort.removeprefix("-")
        self.descending = sort.startswith("-")
        self.next_link: str | None = None
        self.previous_link: str | None = None

    def _ordered(self, queryset: QuerySet, *, backwards: bool) -> QuerySet:
        missing = -1.0 if self.descending else 2.0
        queryset = queryset.annotate(
            sort_value=Coalesce(
                Cast(KeyTextTransform(self.key, "final_metrics"), FloatField()), Value(missing)
            )
        )
        down = self.descending != backwards
        return queryset.order_by(
            F("sort_value").desc() if down else F("sort_value").asc(),
            F("id").desc() if down else F("id").asc(),
        )

    def _after(self, queryset: QuerySet, *, value: float, job_id: uuid.UUID, backwards: bool):
        down = self.descending != backwards
        if down:
            return queryset.filter(Q(sort_value__lt=value) | Q(sort_value=value, id__lt=job_id))
        return queryset.filter(Q(sort_value__gt=value) | Q(sort_value=value, id__gt=job_id))

    def _cursor(self, params: Any) -> tuple[float, uuid.UUID, bool] | None:
        raw = params.get("cursor")
        if not raw:
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(raw.encode("ascii")))
            return float(data["v"]), uuid.UUID(str(data["id"])), bool(data["back"])
        except (ValueError, KeyError, TypeError, binascii.Error, UnicodeEncodeError) as exc:
            raise _cursor_refused() from exc

    def _size(self, params: Any) -> int:
        try:
            size = int(params.get("page_size", self.page_size))
        except ValueError:
            size = self.page_size
        return max(1, min(size, self.max_page_size))

    @staticmethod
    def _encode(*, value: float, job_id: uuid.UUID, back: bool) -> str:
        raw = json.dumps({"v": value, "id": str(job_id), "back": back}).encode()
        return base64.urlsafe_b64encode(raw).decode("ascii")

    def paginate_queryset(
        self, queryset: QuerySet, request: Request | HttpRequest, view: Any = None
    ) -> list[Any]:
        params = request.GET
        size = self._size(params)
        cursor = self._cursor(params)
        backwards = bool(cursor and cursor[2])
        rows = self._ordered(queryset, backwards=backwards)
        if cursor is not None:
            rows = self._after(rows, value=cursor[0], job_id=cursor[1], backwards=backwards)
        page = list(rows[: size + 1])
        more = len(page) > size
        page = page[:size]
        if backwards:
            page.reverse()
        url = request.build_absolute_uri()
        has_next = more if not backwards else True
        has_previous = (more if backwards else cursor is not None) and bool(page)
        if page and has_next:
            edge = page[-1]
            self.next_link = replace_query_param(
                url, "cursor", self._encode(value=edge.sort_value, job_id=edge.id, back=False)
            )
        if page and has_previous:
            edge = page[0]
            self.previous_link = replace_query_param(
                url, "cursor", self._encode(value=edge.sort_value, job_id=edge.id, back=True)
            )
        if not page and cursor is not None:
            self.previous_link = remove_query_param(url, "cursor")
        return page

    def get_next_link(self) -> str | None:
        return self.next_link

    def get_previous_link(self) -> str | None:
        return self.previous_link

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"next": self.next_link, "previous": self.previous_link, "results": data})


def paginated(
    *,
    request: Request,
    view: APIView,
    queryset: QuerySet,
    serializer: type[Serializer],
    pages: PageNumberPagination | CursorPagination | ByMetric | None = None,
) -> Response:
    pages = pages or Pages()
    page = pages.paginate_queryset(queryset, request, view=view)
    return pages.get_paginated_response(serializer(page, many=True).data)
