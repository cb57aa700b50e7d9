"""Cloud, local or hybrid (ADR 0036): every input is a query parameter (docs/cost.md);
measured over the caller's own usage, administrators' over everyone's."""

from __future__ import annotations

from cost.service import NUMBERS, cost_document
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class CostView(APIView):
    @extend_schema(
        parameters=[
            *(OpenApiParameter(name, str) for name in (*NUMBERS, "gpu_hours_per_month")),
            OpenApiParameter(
                "gpu_prices",
                str,
                description="cloud price per GPU-hour by GPU model, `model=price,...`; "
                "default CARRIL_GPU_PRICES (ADR 0049)",
            ),
        ],
        responses={200: dict},
    )
    def get(self, request: Request) -> Response:
        return Response(cost_document(request.query_params, requester=request.user))
