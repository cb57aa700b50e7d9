"""The model registry: list and read versions; administrators import and change stages."""

from __future__ import annotations

from carril_web.downloads import download_response
from django.http import FileResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from jobs.services import job_create_export
from registry.exports import (
    model_exports_list,
    model_version_download,
    model_version_set_serving_format,
)
from registry.models import DOWNLOAD_FORMATS
from registry.selectors import model_version_get, model_versions_list
from registry.services import model_version_import, model_version_set_stage
from rest_framework import status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import Pages, paginated
from api.permissions import ADMINISTRATORS_ONLY
from api.serializers import (
    JobAcceptedOut,
    ModelExportIn,
    ModelExportOut,
    ModelImportIn,
    ModelServingFormatIn,
    ModelStageIn,
    ModelVersionDetailOut,
    ModelVersionOut,
)
from api.views.jobs import accepted


class ModelsView(APIView):
    # Declared so the OpenAPI document describes the page envelope `paginated` returns.
    pagination_class = Pages

    @extend_schema(
        parameters=[OpenApiParameter("stage", str, enum=["candidate", "serving", "retired"])],
        responses={200: ModelVersionOut(many=True)},
    )
    def get(self, request: Request) -> Response:
        return paginated(
            request=request,
            view=self,
            queryset=model_versions_list(
                user=request.user, stage=request.query_params.get("stage")
            ),
            serializer=ModelVersionOut,
        )


class ModelDetailView(APIView):
    @extend_schema(responses={200: ModelVersionDetailOut})
    def get(self, request: Request, version_id: str) -> Response:
        return Response(
            ModelVersionDetailOut(model_version_get(user=request.user, version_id=version_id)).data
        )


class ModelImportView(APIView):
    parser_classes = [MultiPartParser]
    permission_classes = ADMINISTRATORS_ONLY

    @extend_schema(request=ModelImportIn, responses={201: ModelVersionOut})
    def post(self, request: Request) -> Response:
        data = ModelImportIn(data=request.data)
        data.is_valid(raise_exception=True)
        version = model_version_import(
            actor=request.user,
            name=data.validated_data["name"],
            upload=data.validated_data["file"],
        )
        return Response(ModelVersionOut(version).data, status=status.HTTP_201_CREATED)


class ModelStageView(APIView):
    permission_classes = ADMINISTRATORS_ONLY

    @extend_schema(request=ModelStageIn, responses={200: ModelVersionDetailOut, 409: None})
    def post(self, request: Request, version_id: str) -> Response:
        data = ModelStageIn(data=request.data)
        data.is_valid(raise_exception=True)
        version = model_version_set_stage(
            actor=request.user,
            version=model_version_get(user=request.user, version_id=version_id),
            stage=data.validated_data["stage"],
            reason=data.validated_data["reason"],
            require=data.validated_data.get("require"),
        )
        return Response(ModelVersionDetailOut(version).data)


class _FormatIsTheArtifacts(DefaultContentNegotiation):
    """`?format=` names the model format here, not DRF's response format override."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ModelDownloadView(APIView):
    """The version's weights or one of its exports. Whoever may see the version may
    download it; the fingerprint comes in `X-Carril-Fingerprint` (and, when it is the
    sha256 of the bytes sent, in `Repr-Digest`)."""

    content_negotiation_class = _FormatIsTheArtifacts

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(DOWNLOAD_FORMATS), default="pt")],
        responses={(200, "application/octet-stream"): bytes},
    )
    def get(self, request: Request, version_id: str) -> FileResponse:
        version = model_version_get(user=request.user, version_id=version_id)
        download = model_version_download(
            version=version, fmt=request.query_params.get("format", "pt")
        )
        return download_response(download)


class ModelExportsView(APIView):
    @extend_schema(responses={200: ModelExportOut(many=True)})
    def get(self, request: Request, version_id: str) -> Response:
        version = model_version_get(user=request.user, version_id=version_id)
        return Response(ModelExportOut(model_exports_list(version=version), many=True).data)


class ModelServingFormatView(APIView):
    permission_classes = ADMINISTRATORS_ONLY

    @extend_schema(request=ModelServingFormatIn, responses={200: ModelVersionDetailOut})
    def post(self, request: Request, version_id: str) -> Response:
        data = ModelServingFormatIn(data=request.data)
        data.is_valid(raise_exception=True)
        version = model_version_set_serving_format(
            actor=request.user,
            version=model_version_get(user=request.user, version_id=version_id),
            fmt=data.validated_data["format"],
        )
        return Response(ModelVersionDetailOut(version).data)


class ModelExportView(APIView):
    """Start an export job of the version; whoever may see the version may export it."""

    @extend_schema(request=ModelExportIn, responses={202: JobAcceptedOut})
    def post(self, request: Request, version_id: str) -> Response:
        data = ModelExportIn(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        job = job_create_export(
            owner=request.user,
            version=model_version_get(user=request.user, version_id=version_id),
            fmt=params["format"],
            imgsz=params.get("imgsz"),
            half=params["half"],
            dynamic=params["dynamic"],
            int8=params["int8"],
            dataset_id=params.get("dataset"),
        )
        return accepted(job)
