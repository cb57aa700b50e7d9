"""GPU usage sums (issue 16): a user's own; administrators everyone's, or one user's."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from usage.selectors import usage_visible


class UsageView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("month", str, description="YYYY-MM (UTC); default this month"),
            OpenApiParameter("user", str, description="a username (administrators only)"),
        ],
        responses={200: dict},
    )
    def get(self, request: Request) -> Response:
        return Response(
            usage_visible(
                requester=request.user,
                month=request.query_params.get("month"),
                username=request.query_params.get("user"),
            )
        )
