"""Jobs: start a training, an inference or an evaluation; list, read, cancel, logs,
detections, evaluation, artifacts.

Reads answer from the database only; the reconciler keeps rows fresh.
"""

from __future__ import annotations

import json
import mimetypes

from accounts.services import user_sees_everything
from carril_web.errors import Conflict, NoEvaluation, NotFound
from django.http import FileResponse, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from jobs.comparison import COMPARE_MAX, COMPARE_MIN, compare_ids_parse, comparison
from jobs.evaluation import load_evaluation
from jobs.labels import LABEL_FIELDS, job_labels_set
from jobs.listing import job_list_filters
from jobs.models import EVALUATED_KINDS, JobKind, JobState
from jobs.selectors import job_artifact_path, job_get, job_log_tail, jobs_visible_to
from jobs.services import (
    AUGMENTATIONS,
    job_cancel,
    job_create_evaluation,
    job_create_inference,
    job_create_training,
)
from jobs.wording import job_state_sentence
from registry.selectors import model_version_for_inference
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.documents import job_detections_public, job_public, job_url
from api.job_documents import job_documents
from api.pagination import METRIC_SORTS, ByMetric, NewestFirst, paginated
from api.serializers import (
    DetectionsOut,
    EvaluateIn,
    EvaluationOut,
    InferIn,
    JobAcceptedOut,
    JobLabelsIn,
    JobLogsOut,
    JobOut,
    TrainIn,
)


def accepted(job) -> Response:
    body = JobAcceptedOut({"id": job.id, "state": job.state, "url": job_url(job=job)}).data
    return Response(body, status=status.HTTP_202_ACCEPTED)


class TrainView(APIView):
    @extend_schema(request=TrainIn, responses={202: JobAcceptedOut})
    def post(self, request: Request) -> Response:
        data = TrainIn(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        job = job_create_training(
            owner=request.user,
            dataset_id=params["dataset"],
            model=params["model"],
            epochs=params["epochs"],
            imgsz=params["imgsz"],
            batch=params["batch"],
            seeds=params["seeds"],
            gpus=params["gpus"],
            lr0=params.get("lr0"),
            patience=params["patience"],
            optimizer=params["optimizer"],
            augmentations={name: params[name] for name in AUGMENTATIONS},
            labels={k: params[k] for k in LABEL_FIELDS if k in params},
        )
        return accepted(job)


class InferView(APIView):
    parser_classes = [MultiPartParser]

    @extend_schema(request=InferIn, responses={202: JobAcceptedOut})
    def post(self, request: Request) -> Response:
        # A request with no multipart body parses to a plain dict, not a QueryDict.
        fields = request.data.dict() if hasattr(request.data, "dict") else dict(request.data)
        data = InferIn(data={**fields, "images": request.FILES.getlist("images")})
        data.is_valid(raise_exception=True)
        params = data.validated_data
        version = model_version_for_inference(
            user=request.user, version_id=params.get("model_version")
        )
        job = job_create_inference(
            owner=request.user,
            version=version,
            images=params["images"],
            conf=params["conf"],
            iou=params["iou"],
            imgsz=params.get("imgsz"),
            fmt=params.get("format"),
            media=params.get("media"),
            video_options={k: params[k] for k in ("fps", "max_seconds", "max_frames")},
            slicing=(
                {
                    "slice_size": params["slice_size"],
                    "overlap": params["overlap"],
                    "merge": params["merge"],
                }
                if params.get("slice_size")
                else None
            ),
        )
        return accepted(job)


class EvaluateView(APIView):
    @extend_schema(request=EvaluateIn, responses={202: JobAcceptedOut})
    def post(self, request: Request) -> Response:
        data = EvaluateIn(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        job = job_create_evaluation(
            owner=request.user,
            version_id=params["model_version"],
            dataset_id=params["dataset"],
            split=params["split"],
            imgsz=params.get("imgsz"),
            conf=params["conf"],
            iou=params["iou"],
        )
        return accepted(job)


class JobsView(APIView):
    # Declared so the OpenAPI document describes the page envelope `paginated` returns.
    pagination_class = NewestFirst

    @extend_schema(
        parameters=[
            OpenApiParameter("state", str, enum=[s.value for s in JobState]),
            OpenApiParameter("kind", str, enum=[k.value for k in JobKind]),
            OpenApiParameter("tag", str, description="only jobs with this tag"),
            OpenApiParameter("dataset", OpenApiTypes.UUID, description="only jobs on it"),
            OpenApiParameter(
                "sort",
                str,
                enum=METRIC_SORTS,
                description="by a final metric of the best seed, '-' for highest first; "
                "jobs without it come last. Default: newest first",
            ),
            OpenApiParameter("cursor", str, description="from a next or previous link"),
            OpenApiParameter("page_size", int, description="1 to 200; 25 by default"),
        ],
        responses={200: JobOut(many=True)},
    )
    def get(self, request: Request) -> Response:
        filters = job_list_filters(params=request.query_params)
        sort = request.query_params.get("sort") or None
        return paginated(
            request=request,
            view=self,
            queryset=jobs_visible_to(user=request.user, **filters),
            serializer=JobOut,
            pages=ByMetric(sort=sort) if sort else NewestFirst(),
        )


class JobDetailView(APIView):
    @extend_schema(responses={200: JobOut})
    def get(self, request: Request, job_id: str) -> HttpResponse:
        key = str(job_id)
        renderer = JSONRenderer()
        # Documents are kept as compact JSON; one asked for indented is rendered afresh
        # (a finished job's always answers compact, as it did before).
        compact = renderer.get_indent(request.accepted_media_type, {}) is None
        kept = job_documents.get(job_id=key)
        if (
            kept is not None
            and (compact or kept.finished)
            and (kept.owner_id == request.user.pk or user_sees_everything(user=request.user))
        ):
            return HttpResponse(kept.body, content_type="application/json")
        job = job_get(user=request.user, job_id=job_id)  # NotFound for someone else's job
        document = job_public(job=job)
        if job.is_terminal:
            body = renderer.render(document)
            job_documents.put(job_id=key, owner_id=job.owner_id, body=body, finished=True)
        else:
            # The bytes DRF's Response would render (an `indent` asked for in Accept
            # included), without its template-response round trip.
            body = renderer.render(document, request.accepted_media_type)
            if compact:
                job_documents.put(job_id=key, owner_id=job.owner_id, body=body, finished=False)
        return HttpResponse(body, content_type="application/json")

    @extend_schema(request=JobLabelsIn, responses={200: JobOut})
    def patch(self, request: Request, job_id: str) -> Response:
        """Change the job's name, tags or note (its owner only); nothing else changes."""
        job = job_get(user=request.user, job_id=job_id)
        values = request.data if isinstance(request.data, dict) else {}
        job = job_labels_set(job=job, user=request.user, values=dict(values))
        job_documents.forget(job_id=str(job.id))
        return Response(job_public(job=job))


class JobsCompareView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "ids",
                str,
                required=True,
                description=f"{COMPARE_MIN} to {COMPARE_MAX} training job ids, comma-separated; "
                "differences are relative to the first",
            )
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        ids = compare_ids_parse(request.query_params.getlist("ids"))
        return Response(comparison(user=request.user, ids=ids))


class JobCancelView(APIView):
    @extend_schema(request=None, responses={202: JobOut})
    def post(self, request: Request, job_id: str) -> Response:
        job = job_cancel(job=job_get(user=request.user, job_id=job_id))
        job_documents.forget(job_id=str(job.id))  # its poller sees `cancelling` at once
        return Response(JobOut(job).data, status=status.HTTP_202_ACCEPTED)


class JobLogsView(APIView):
    @extend_schema(parameters=[OpenApiParameter("tail", int)], responses={200: JobLogsOut})
    def get(self, request: Request, job_id: str) -> Response:
        job = job_get(user=request.user, job_id=job_id)
        try:
            tail = int(request.query_params.get("tail", 200))
        except ValueError:
            tail = 200
        return Response({"job_id": str(job.id), "lines": job_log_tail(job=job, lines=tail)})


class JobDetectionsView(APIView):
    @extend_schema(parameters=[OpenApiParameter("download", bool)], responses={200: DetectionsOut})
    def get(self, request: Request, job_id: str) -> Response | HttpResponse:
        job = job_get(user=request.user, job_id=job_id)
        if job.kind != JobKind.INFER:
            raise NotFound("Only inference jobs have detections.")
        if job.state != JobState.SUCCEEDED:
            raise Conflict(
                job_state_sentence(job.state, consequence="detections come when it succeeds")
            )
        body = job_detections_public(job=job)
        if request.query_params.get("download") in {"1", "true"}:
            response = HttpResponse(json.dumps(body, indent=2), content_type="application/json")
            response["Content-Disposition"] = f'attachment; filename="detections-{job.id}.json"'
            return response
        return Response(DetectionsOut(body).data)


class JobEvaluationView(APIView):
    @extend_schema(responses={200: EvaluationOut})
    def get(self, request: Request, job_id: str) -> Response:
        job = job_get(user=request.user, job_id=job_id)  # NotFound for someone else's job
        document = load_evaluation(job=job) if job.kind in EVALUATED_KINDS else None
        if document is None:
            raise NoEvaluation(
                f"The {job.kind} job is {job.state} and has no evaluation; trainings and "
                "evaluate jobs write one when they succeed.",
                details={"job": str(job.id), "kind": str(job.kind), "state": str(job.state)},
            )
        return Response(document)


class JobArtifactView(APIView):
    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    def get(self, request: Request, job_id: str, relpath: str) -> FileResponse:
        job = job_get(user=request.user, job_id=job_id)
        path = job_artifact_path(job=job, relpath=relpath)
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return FileResponse(open(path, "rb"), content_type=content_type)
