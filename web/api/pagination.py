"""Page a queryset the way the API's lists page.

Datasets and models: page numbers, `{count, next, previous, results}`. The job list,
which grows without bound, pages by keyset (issue 18): `{next, previous, results}`, the
links carrying an opaque `cursor`; a deep page costs what the first does (an indexed
`created_at < position` instead of an OFFSET), and there is no `count` (counting every
row on every page is the cost that grows).
"""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework.pagination import CursorPagination, PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView


class Pages(PageNumberPagination):
    page_size = 25
    page_size_query_param = "page_size"
    max_page_size = 200


class NewestFirst(CursorPagination):
    """Keyset pages of a list ordered by creation, newest first."""

    page_size = 25
    page_size_query_param = "page_size"
    max_page_size = 200
    ordering = "-created_at"


def paginated(
    *,
    request: Request,
    view: APIView,
    queryset: QuerySet,
    serializer: type[Serializer],
    pages: PageNumberPagination | CursorPagination | None = None,
) -> Response:
    pages = pages or Pages()
    page = pages.paginate_queryset(queryset, request, view=view)
    return pages.get_paginated_response(serializer(page, many=True).data)
