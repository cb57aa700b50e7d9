"""Datasets: upload (validated), list, read, delete, sample images."""

from __future__ import annotations

from datasets.selectors import dataset_get, dataset_image_path, dataset_samples, datasets_visible_to
from datasets.services import dataset_create_from_upload, dataset_delete
from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import Pages, paginated
from api.serializers import DatasetCreateIn, DatasetOut, DatasetSampleOut


class DatasetsView(APIView):
    # Declared so the OpenAPI document describes the page envelope `paginated` returns.
    pagination_class = Pages
    parser_classes = [MultiPartParser]

    @extend_schema(responses={200: DatasetOut(many=True)})
    def get(self, request: Request) -> Response:
        return paginated(
            request=request,
            view=self,
            queryset=datasets_visible_to(user=request.user),
            serializer=DatasetOut,
        )

    @extend_schema(request=DatasetCreateIn, responses={201: DatasetOut})
    def post(self, request: Request) -> Response:
        data = DatasetCreateIn(data=request.data)
        data.is_valid(raise_exception=True)
        dataset = dataset_create_from_upload(
            owner=request.user,
            name=data.validated_data["name"],
            upload=data.validated_data["file"],
        )
        return Response(DatasetOut(dataset).data, status=status.HTTP_201_CREATED)


class DatasetDetailView(APIView):
    @extend_schema(responses={200: DatasetOut})
    def get(self, request: Request, dataset_id: str) -> Response:
        return Response(DatasetOut(dataset_get(user=request.user, dataset_id=dataset_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, dataset_id: str) -> Response:
        dataset = dataset_get(user=request.user, dataset_id=dataset_id)
        dataset_delete(dataset=dataset)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DatasetSamplesView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("split", str, enum=["train", "val", "test"]),
            OpenApiParameter("limit", int),
        ],
        responses={200: DatasetSampleOut(many=True)},
    )
    def get(self, request: Request, dataset_id: str) -> Response:
        dataset = dataset_get(user=request.user, dataset_id=dataset_id)
        split = request.query_params.get("split", "train")
        try:
            limit = int(request.query_params.get("limit", 12))
        except ValueError:
            limit = 12
        samples = dataset_samples(dataset=dataset, split=split, limit=limit)
        for sample in samples:
            sample["url"] = reverse(
                "api:dataset-image",
                kwargs={"dataset_id": dataset.id, "split": sample["split"], "name": sample["name"]},
            )
        return Response(DatasetSampleOut(samples, many=True).data)


class DatasetImageView(APIView):
    @extend_schema(responses={(200, "image/*"): bytes})
    def get(self, request: Request, dataset_id: str, split: str, name: str) -> FileResponse:
        dataset = dataset_get(user=request.user, dataset_id=dataset_id)
        return FileResponse(open(dataset_image_path(dataset=dataset, split=split, name=name), "rb"))
