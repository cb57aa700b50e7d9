"""The job kinds this service admits, as the API process declares them: spec, submit-time
checks, memory estimate, worker style. What a worker runs for each is in
`gpu_service.workloads.runners`.
"""

from __future__ import annotations

from gpu_service.workloads.base import Kind
from gpu_service.workloads.diagnostic.spec import DIAGNOSTIC
from gpu_service.workloads.evaluate.spec import EVALUATE
from gpu_service.workloads.export.spec import EXPORT
from gpu_service.workloads.infer.spec import INFER
from gpu_service.workloads.train.spec import TRAIN

KINDS: dict[str, Kind] = {kind.name: kind for kind in (DIAGNOSTIC, TRAIN, INFER, EXPORT, EVALUATE)}
