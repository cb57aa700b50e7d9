"""The model registry: list and read versions; administrators import and change stages."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from registry.selectors import model_version_get, model_versions_list
from registry.services import model_version_import, model_version_set_stage
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import Pages, paginated
from api.permissions import IsAdministrator
from api.scopes import TokenScopes
from api.serializers import ModelImportIn, ModelStageIn, ModelVersionDetailOut, ModelVersionOut


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
    permission_classes = [IsAuthenticated, TokenScopes, IsAdministrator]

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
    permission_classes = [IsAuthenticated, TokenScopes, IsAdministrator]

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
