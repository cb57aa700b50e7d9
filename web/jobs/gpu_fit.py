"""A training's GPU count checked against the GPU service's hosts before its job exists.

Admission refuses, for good, a job asking for more GPUs than any one host has (a job
runs on one host). Told only at delivery, the user saw 202 and then a failed job. So
the submit asks the GPU service's admission first (`POST /v1/admission/check`) and
answers its 409 RESOURCE_UNAVAILABLE with its reason, creating nothing; the rule stays
in gpu_service/admission.py alone. When the GPU service cannot answer now, the job is
created and delivered later as before (creating a job never answers 503, ADR 0011),
and its delivery fails it with the same code if it still cannot fit.
"""

from __future__ import annotations

import logging

import gpu_client
from carril_web.errors import GpuServiceUnavailable, ResourceUnavailable

logger = logging.getLogger(__name__)


def gpus_check(*, gpus: int) -> None:
    """ResourceUnavailable when the GPU service says no state of its lanes could ever
    admit `gpus` GPUs; nothing when it admits them or cannot be asked."""
    try:
        with gpu_client.client_build() as gpu:
            gpu.admission_check(gpus=gpus)
    except GpuServiceUnavailable as exc:
        logger.info("GPU count not checked at submit (%s); delivery will", exc.details)
    except gpu_client.GpuServiceRefused as exc:
        if exc.code != "RESOURCE_UNAVAILABLE":
            # Not an answer about the count (a GPU service older than the check: 404).
            logger.info("GPU count not checked at submit: %s", exc)
            return
        raise ResourceUnavailable(
            exc.message, details={**exc.details, "fields": {"gpus": [exc.message]}}
        ) from exc
