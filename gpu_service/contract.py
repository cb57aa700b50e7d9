"""The documents that cross the boundary between the GPU service and the web app.

Defined once, here, with the standard library only: the web app imports this module
(its image copies `gpu_service/__init__.py` and this file) to read what the GPU
service answers, so nothing here may import pydantic, fastapi, torch or any other part
of `gpu_service`. The GPU service builds these shapes in its workers and checks them
with pydantic's TypeAdapter, which understands TypedDicts.

Metric names are canonical: `precision`, `recall`, `mAP50`, `mAP50-95`, everywhere
(epoch records, seed summaries, the manifest). Readers use these keys and no others.
"""

from __future__ import annotations

import re
from typing import Any, Literal, NotRequired

try:
    # pydantic reads TypedDicts only from typing_extensions before Python 3.12; it is
    # there wherever pydantic is. The web app reads these shapes without pydantic, so
    # the standard library's TypedDict is enough there.
    from typing_extensions import TypedDict
except ImportError:  # pragma: no cover - a web image without typing_extensions
    from typing import TypedDict  # type: ignore[assignment]

# ---- job ids and states ------------------------------------------------------------

# A job id given by the client: it names the journal record, the folder
# `jobs/<job_id>` on shared storage and the `job` field of log lines.
JOB_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"
_JOB_ID = re.compile(JOB_ID_PATTERN.removeprefix("^").removesuffix("$"))


def is_job_id(value: str) -> bool:
    """Whole-string match (a `$` would let a trailing newline through)."""
    return _JOB_ID.fullmatch(value) is not None


JobStateName = Literal["queued", "running", "cancelling", "succeeded", "failed", "cancelled"]
JOB_STATES: tuple[JobStateName, ...] = (
    "queued",
    "running",
    "cancelling",
    "succeeded",
    "failed",
    "cancelled",
)
TERMINAL_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
KindName = Literal["diagnostic", "train", "infer", "export", "evaluate"]

# ---- what training accepts ---------------------------------------------------------

# Architectures a training may start from (ultralytics builds them from `<name>.yaml`).
ARCHITECTURE_FAMILIES = ("yolov8", "yolo11", "yolo26")
ARCHITECTURE_SCALES = ("n", "s", "m", "l", "x")
ARCHITECTURES: tuple[str, ...] = tuple(
    f"{family}{scale}" for family in ARCHITECTURE_FAMILIES for scale in ARCHITECTURE_SCALES
)
# Image sizes (pixels) training and inference accept: a multiple of 32 in this range.
IMGSZ_MIN = 32
IMGSZ_MAX = 2048
IMGSZ_MULTIPLE = 32
# Training hyperparameters passed on to ultralytics, one table for the web app's API and
# form and the GPU service's train spec: inclusive bounds and the default, which is
# ultralytics' own. The augmentations are probabilities or gains (degrees: +/- degrees).
OPTIMIZERS = ("auto", "SGD", "Adam", "AdamW", "NAdam", "RAdam", "RMSProp")
AUGMENTATIONS: dict[str, tuple[float, float, float]] = {
    "mosaic": (0.0, 1.0, 1.0),
    "fliplr": (0.0, 1.0, 0.5),
    "hsv_h": (0.0, 1.0, 0.015),
    "hsv_s": (0.0, 1.0, 0.7),
    "hsv_v": (0.0, 1.0, 0.4),
    "scale": (0.0, 0.9, 0.5),  # +/- gain: 1.0 would allow scaling an image to nothing
    "degrees": (0.0, 180.0, 0.0),
}
# The initial learning rate: above 0, at most this; unset, the optimizer chooses it.
LR0_MAX = 1.0
# Epochs without validation improvement before a seed stops; 0 turns it off.
PATIENCE_DEFAULT = 100
# The sha256 fingerprint that names registered weights.
FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")

# ---- metrics -----------------------------------------------------------------------

METRIC_KEYS = ("precision", "recall", "mAP50", "mAP50-95")
# Validation fitness that picks the best seed (ADR 0010).
FITNESS_METRIC = "mAP50-95"

# `mAP50-95` is not an identifier, hence the functional form.
ValMetrics = TypedDict(
    "ValMetrics",
    {"precision": float, "recall": float, "mAP50": float, "mAP50-95": float},
    total=False,
)

EpochRecord = TypedDict(
    "EpochRecord",
    {
        "seed": int,
        "epoch": int,  # 1-based
        "box_loss": float,
        "cls_loss": float,
        "dfl_loss": float,
        "precision": float,
        "recall": float,
        "mAP50": float,
        "mAP50-95": float,
        "fitness": float,
        "batch": int,  # the batch size that epoch ran with
        "attempt": int,  # the job's attempt that ran it (the manager adds it; ADR 0047)
    },
    total=False,
)


class Progress(TypedDict, total=False):
    """How far a job is. Every key is present in a job status record (None if unknown)."""

    stage: str | None
    seed: int | None  # 1-based index of the seed being trained
    seeds: int | None
    epoch: int | None
    epochs: int | None
    batch: int | None
    batches: int | None
    fraction: float  # 0..1 over the whole job


PROGRESS_KEYS: tuple[str, ...] = tuple(Progress.__annotations__)

# ---- results -----------------------------------------------------------------------


class WeightsRef(TypedDict):
    fingerprint: str  # sha256 of the file's bytes
    path: str  # storage/weights/<fingerprint>.pt


class SeedResult(TypedDict):
    seed: int
    fitness: float | None
    metrics: ValMetrics
    fingerprint: str  # of that seed's best weights
    epochs_run: int


class TrainingResult(TypedDict):
    """The result of a succeeded `train` job."""

    weights: WeightsRef  # the best seed's weights, registered
    best_seed: int
    fitness_metric: str
    seeds: list[SeedResult]
    manifest_path: str
    architecture: str | None
    class_names: list[str]
    imgsz: int
    task: str
    batch: int  # as requested
    batch_effective: int  # the smallest any seed ran with (ultralytics lowers it on OOM)


class Detection(TypedDict):
    class_id: int
    class_name: str
    confidence: float
    box_xyxy: list[float]  # pixels of the original image
    box_xywhn: list[float]  # centre and size, normalised to 0..1


class ImageResult(TypedDict):
    source: str
    width: int
    height: int
    detections: list[Detection]
    timing_ms: dict[str, float]
    annotated_path: str


class FrameCount(TypedDict):
    index: int  # the frame's number in the source video
    time_s: float
    count: int  # detections on that frame


class VideoResult(TypedDict):
    """What an inference over a video adds: the annotated video and a count per frame."""

    source: str
    fps_sampled: float
    frames: list[FrameCount]
    annotated_video: str  # mp4 (MPEG-4 part 2), for download
    annotated_webm: str  # VP8, what browsers play
    detections_path: str  # per-frame detections JSON


class InferenceResult(TypedDict):
    """The result of a succeeded `infer` job (also written to `results_path`)."""

    model: str  # fingerprint
    results_path: str
    images: list[ImageResult]
    images_per_second: float
    format: str  # pt, onnx or openvino: what the job ran on
    export: str | None  # the export's fingerprint when format is not pt
    imgsz: int  # the size the predictor ran at (a static export's own size)
    video: VideoResult | None


# ---- exports -----------------------------------------------------------------------

# Parity: boxes of the exported model and of the .pt model are matched by class and
# IoU >= PARITY_IOU; matched confidences may differ by at most PARITY_CONF_TOLERANCE,
# and at least PARITY_MIN_MATCHED of the boxes must be matched.
PARITY_IOU = 0.9
PARITY_CONF_TOLERANCE = 0.05
PARITY_MIN_MATCHED = 0.95
# INT8 quantisation moves confidences more than a change of runtime does: an INT8 export's
# matched confidences may differ by up to this instead (same IoU and matched-fraction rule).
PARITY_INT8_CONF_TOLERANCE = 0.15


class ParityResult(TypedDict):
    passed: bool
    images: int
    boxes_reference: int  # boxes of the .pt model at the parity confidence
    boxes_export: int
    matched_fraction: float  # matched boxes of both sides over all of them (1.0 if none)
    max_conf_diff: float
    iou_threshold: float
    conf_tolerance: float
    min_matched: float
    conf: float


class ExportManifest(TypedDict):
    """`manifest.json` beside an export; paths are relative to storage."""

    fingerprint: str
    format: str  # onnx, openvino, torchscript, engine
    artifact: str  # storage-relative: exports/<fingerprint>/model.onnx
    size_bytes: int
    source_fingerprint: str
    imgsz: int
    half: bool
    dynamic: bool
    int8: bool
    opset: int | None
    simplified: bool
    class_names: list[str]
    tool_versions: dict[str, str]
    parity: ParityResult
    created_at: str
    job_id: str


class ExportResult(TypedDict):
    """The result of a succeeded `export` job."""

    export: ExportManifest
    manifest_path: str  # storage-relative


# ---- evaluations -------------------------------------------------------------------

# Where a job's evaluation document lives, relative to its folder `jobs/<id>/` (issue 13;
# the web app's `jobs.evaluation` reads it, its docstring gives the document's shape).
EVALUATION_DIR = "evaluation"
EVALUATION_DOCUMENT = "evaluation/evaluation.json"


class EvaluationResult(TypedDict):
    """The result of a succeeded `evaluate` job: the headline numbers and where the
    whole document is (job-relative)."""

    model: str  # fingerprint
    split: str
    imgsz: int
    metrics: ValMetrics
    evaluation_path: str  # evaluation/evaluation.json


# ---- the job status record ---------------------------------------------------------


class ErrorDocument(TypedDict):
    code: str
    message: str
    details: dict[str, Any]


class AttemptUsage(TypedDict):
    """What one attempt of a job held (issue 16): its GPUs x the wall time its lanes
    were held, and the energy. `energy_source` is "measured" (NVML power integrated
    over the attempt) or "modelled" (a declared wattage; the simulated runtime)."""

    attempt: int
    gpus: int
    held_from: str  # ISO 8601, the admission
    held_until: str  # ISO 8601, the release of its lanes
    gpu_seconds: float
    energy_wh: float
    energy_source: Literal["measured", "modelled"]
    gpu_model: NotRequired[str]  # the GPUs' name, as the runtime reports it


class JobStatus(TypedDict):
    """One job as `GET /v1/jobs/{id}` and `POST /v1/jobs/status` answer it.

    Times are ISO 8601 strings with a time zone. `result` is a TrainingResult, an
    InferenceResult or (diagnostic) a free-form document, by `kind`.
    """

    id: str
    kind: str
    spec: dict[str, Any]
    priority: int
    state: JobStateName
    gpus_requested: int
    gpu_ids_requested: list[int] | None
    gpu_ids: list[int]
    attempt: int
    progress: Progress
    metrics: dict[str, Any]  # {"epochs": [EpochRecord, ...], plus summary fields}
    result: dict[str, Any] | None
    error: ErrorDocument | None
    submitted_at: str
    started_at: str | None
    finished_at: str | None
    heartbeat_at: str | None
    request_id: str | None
    usage: NotRequired[list[AttemptUsage]]  # one per attempt that held lanes (issue 16)
