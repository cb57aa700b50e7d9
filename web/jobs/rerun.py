"""Run a finished job again: a new job with the same spec ("Run again" on the job page).

The spec is copied as it was sent to the GPU service, so whatever the job was asked to
do (every hyperparameter, present and future) is asked again, checked by the same
quotas. What it reads must still be there and still be the owner's to read: the
dataset of a training, the images of an inference (copied, because retention may prune
the first job's folder while the second one waits).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

from carril_web.errors import Conflict, NotFound, ValidationFailed
from datasets.models import DatasetState
from datasets.selectors import dataset_get
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from registry.visibility import model_version_visible_to

from jobs.models import Job, JobKind
from jobs.services import _job_create
from jobs.wording import job_state_sentence


def _inference_uploads(job_id: uuid.UUID) -> Path:
    return Path(settings.CARRIL_STORAGE) / "uploads" / "infer" / str(job_id)


def _training_again(*, owner: AbstractBaseUser, job: Job) -> Job:
    try:
        dataset = dataset_get(user=owner, dataset_id=job.dataset_id) if job.dataset_id else None
    except NotFound:
        dataset = None
    if dataset is None:
        raise ValidationFailed(
            "The job's dataset no longer exists; use Clone with changes to choose another."
        )
    if dataset.state != DatasetState.READY:
        raise ValidationFailed(f"The job's dataset is {dataset.state}; it must be ready.")
    return _job_create(
        owner=owner,
        kind=JobKind.TRAIN,
        spec=dict(job.spec),
        gpus=job.gpus,
        dataset=dataset,
        model_version=job.model_version,
    )


def _inference_again(*, owner: AbstractBaseUser, job: Job) -> Job:
    version = job.model_version
    if version is None or not model_version_visible_to(user=owner, version=version):
        raise ValidationFailed("The job's model version no longer exists.")
    source = _inference_uploads(job.id)
    if not source.is_dir():
        raise ValidationFailed(
            "The job's images are no longer stored; use Clone with changes to upload them."
        )
    new_id = uuid.uuid4()
    folder = _inference_uploads(new_id)
    shutil.copytree(source, folder)
    # The spec names the stored files by path: the copies are the new job's.
    spec = json.loads(json.dumps(job.spec).replace(f"{source}/", f"{folder}/"))
    try:
        return _job_create(
            owner=owner,
            kind=JobKind.INFER,
            spec=spec,
            gpus=job.gpus,
            model_version=version,
            job_id=new_id,
        )
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def job_run_again(*, owner: AbstractBaseUser, job: Job) -> Job:
    """A new job, owned by `owner`, asking what `job` asked. Only an ended job runs again
    (a running one would compete with itself for the same GPUs and output)."""
    if not job.is_terminal:
        raise Conflict(job_state_sentence(job.state, consequence="run it again once it has ended"))
    if job.kind == JobKind.TRAIN:
        return _training_again(owner=owner, job=job)
    if job.kind == JobKind.INFER:
        return _inference_again(owner=owner, job=job)
    return _job_create(
        owner=owner,
        kind=job.kind,
        spec=dict(job.spec),
        gpus=job.gpus,
        model_version=job.model_version,
    )
