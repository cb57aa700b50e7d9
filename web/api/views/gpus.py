"""The GPUs as the reconciler last saw them; never waits on the GPU service."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from jobs.selectors import gpus_overview
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import GpusOut


class GpusView(APIView):
    @extend_schema(responses={200: GpusOut})
    def get(self, request: Request) -> Response:
        return Response(GpusOut(gpus_overview(user=request.user)).data)
