"""HTTP routes: thin. Parse, call the job manager or the journal, present the result."""

from __future__ import annotations

from collections import deque
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response, status
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST

from gpu_service.api.deps import (
    JournalDep,
    ManagerDep,
    RequestIdDep,
    SettingsDep,
    WeightsDep,
    require_token,
)
from gpu_service.api.present import gpus_public, job_public, submission_of
from gpu_service.api.schemas import (
    AdmissionCheck,
    AdmissionPossible,
    ErrorEnvelope,
    GpusPublic,
    Health,
    JobAccepted,
    JobLogs,
    JobPublic,
    JobsPublic,
    JobsStatus,
    JobsStatusQuery,
    JobStateName,
    JobSubmit,
    KindName,
    MediaProbe,
    MediaPublic,
    WeightsImport,
    WeightsPublic,
)
from gpu_service.errors import NotFound, ValidationFailed
from gpu_service.journal import JobState
from gpu_service.storage import inside_storage
from gpu_service.workloads.infer.media import check_media

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorEnvelope} for code in (401, 404, 409, 422, 500)
}

public = APIRouter()
private = APIRouter(prefix="/v1", dependencies=[Depends(require_token)], responses=ERRORS)


@public.get("/healthz", response_model=Health, tags=["health"])
async def healthz(request: Request) -> Health:
    """Liveness: answers at once, whatever the jobs are doing."""
    runtime = request.app.state.runtime
    return Health(
        status="ok",
        runtime=runtime.name,
        simulated=runtime.name == "simulated",
        gpus=len(request.app.state.manager.admission.lanes),
    )


@public.get(
    "/readyz", response_model=Health, tags=["health"], responses={503: {"model": ErrorEnvelope}}
)
async def readyz(request: Request, journal: JournalDep) -> Health:
    """Ready: the journal answers and the scheduler has finished start-up recovery."""
    journal.jobs_list(limit=1)
    return await healthz(request)


@public.get("/metrics", response_class=PlainTextResponse, tags=["health"])
async def metrics(request: Request) -> Response:
    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE_LATEST)


@private.post(
    "/jobs",
    response_model=JobAccepted,
    status_code=status.HTTP_202_ACCEPTED,
    tags=["jobs"],
    responses={200: {"model": JobAccepted, "description": "idempotent resubmit"}},
)
async def job_submit(
    body: JobSubmit, manager: ManagerDep, request_id: RequestIdDep, response: Response
) -> JobAccepted:
    job, created = manager.submit(submission_of(body), request_id=request_id)
    if not created:
        response.status_code = status.HTTP_200_OK
    return JobAccepted(id=job.id, state=job.state.value, status_url=f"/v1/jobs/{job.id}")


@private.get("/jobs", response_model=JobsPublic, tags=["jobs"])
async def jobs_list(
    journal: JournalDep,
    state: JobStateName | None = None,
    kind: KindName | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JobsPublic:
    states = [JobState(state)] if state else []
    return JobsPublic(
        jobs=[job_public(j) for j in journal.jobs_list(states=states, kind=kind, limit=limit)]
    )


@private.post("/jobs/status", response_model=JobsStatus, tags=["jobs"])
async def jobs_status(body: JobsStatusQuery, journal: JournalDep) -> JobsStatus:
    jobs = journal.jobs_get(job_ids=body.ids)
    known = {job.id for job in jobs}
    return JobsStatus(
        jobs=[job_public(j) for j in jobs], missing=[i for i in body.ids if i not in known]
    )


@private.get("/jobs/{job_id}", response_model=JobPublic, tags=["jobs"])
async def job_get(job_id: str, journal: JournalDep) -> JobPublic:
    return job_public(journal.job_get(job_id=job_id))


@private.post("/jobs/{job_id}/cancel", response_model=JobPublic, tags=["jobs"])
async def job_cancel(job_id: str, manager: ManagerDep) -> JobPublic:
    return job_public(manager.cancel(job_id=job_id))


@private.get("/jobs/{job_id}/logs", response_model=JobLogs, tags=["jobs"])
def job_logs(
    job_id: str,
    journal: JournalDep,
    settings: SettingsDep,
    tail: Annotated[int, Query(ge=1, le=10_000)] = 200,
) -> JobLogs:
    journal.job_get(job_id=job_id)  # 404 for unknown jobs, not an empty log
    path = settings.job_dir(job_id) / "job.log"
    lines: deque[str] = deque(maxlen=tail)
    if path.exists():
        with path.open(encoding="utf-8", errors="replace") as fh:
            lines.extend(line.rstrip("\n") for line in fh)
    return JobLogs(job_id=job_id, lines=list(lines))


@private.get("/gpus", response_model=GpusPublic, tags=["gpus"])
async def gpus(manager: ManagerDep) -> GpusPublic:
    return gpus_public(manager)


@private.post("/admission/check", response_model=AdmissionPossible, tags=["gpus"])
async def admission_check(body: AdmissionCheck, manager: ManagerDep) -> AdmissionPossible:
    """200 when some state of the lanes admits `gpus` GPUs; else 409 RESOURCE_UNAVAILABLE
    with the reason a submit would get (admission's one rule)."""
    manager.check_possible(gpus=body.gpus)
    return AdmissionPossible(gpus=body.gpus)


@private.post(
    "/weights", response_model=WeightsPublic, status_code=status.HTTP_201_CREATED, tags=["weights"]
)
async def weights_import(
    body: WeightsImport, settings: SettingsDep, weights: WeightsDep
) -> WeightsPublic:
    src = inside_storage(path=body.path, storage=settings.storage)
    if not src.is_file():
        raise ValidationFailed("no such file in shared storage", details={"path": body.path})
    return WeightsPublic(**await weights.weights_import(src=src))


@private.post("/media/probe", response_model=MediaPublic, tags=["media"])
def media_probe(body: MediaProbe, settings: SettingsDep) -> MediaPublic:
    """Check a video (its first frame decoded in a child process) or a zip (its listing and
    image headers) as an infer job's submit would; 422 VALIDATION_ERROR with
    `details.reason` when it would be refused, 422 IMAGE_TOO_LARGE for frames or images
    over CARRIL_INFER_MAX_PIXELS. A plain `def`: it blocks, so it runs in the thread pool."""
    return MediaPublic(
        **check_media(path=body.path, max_seconds=body.max_seconds, storage=settings.storage)
    )


@private.get("/weights/{fingerprint}", response_model=WeightsPublic, tags=["weights"])
async def weights_get(fingerprint: str, weights: WeightsDep) -> WeightsPublic:
    if len(fingerprint) != 64 or any(c not in "0123456789abcdef" for c in fingerprint):
        raise NotFound("no such weights")
    return WeightsPublic(**await weights.weights_describe(fingerprint=fingerprint))
