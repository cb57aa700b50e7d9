"""Page a queryset the way every list in the API pages: `{count, next, previous, results}`."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView


class Pages(PageNumberPagination):
    page_size = 25
    page_size_query_param = "page_size"
    max_page_size = 200


def paginated(
    *, request: Request, view: APIView, queryset: QuerySet, serializer: type[Serializer]
) -> Response:
    pages = Pages()
    page = pages.paginate_queryset(queryset, request, view=view)
    return pages.get_paginated_response(serializer(page, many=True).data)
