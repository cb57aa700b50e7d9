"""Keep ultralytics offline and silent in every process that trains or infers.

Ultralytics reads most of its switches from the environment once, at import, so the
variables must be in place before `import ultralytics`. The core passes
`offline_environment()` to every worker it spawns; `make_ultralytics_silent()` then
turns off what lives in ultralytics' settings file and what the environment cannot
reach (the AMP check that downloads a model, the integrations enabled in settings).
Both are idempotent, and the workloads call `make_ultralytics_silent()` themselves, so
a worker started without the environment is still offline.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Integrations ultralytics enables from its settings file; each can phone home.
_INTEGRATIONS = ("clearml", "comet", "dvc", "mlflow", "raytune", "tensorboard", "wandb")


def offline_environment(*, storage: Path) -> dict[str, str]:
    """Environment for a worker process: no hub, no telemetry, no downloads, no pip."""
    return {
        "YOLO_OFFLINE": "1",  # ultralytics.utils.ONLINE = False: no events, no hub, no downloads
        "YOLO_AUTOINSTALL": "false",  # never pip-install a missing requirement at run time
        "ULTRALYTICS_SKIP_REQUIREMENTS_CHECKS": "1",
        "ULTRALYTICS_SAFE_LOAD": "1",  # every checkpoint load, resume included, is weights_only
        "YOLO_CONFIG_DIR": str(Path(storage) / "ultralytics"),  # settings.json on our storage
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "COMET_MODE": "disabled",
        # NNCF (OpenVINO INT8 calibration) replaces its telemetry with a stub under NNCF_CI;
        # openvino_telemetry sends nothing without an opt-in file, which we never write.
        "NNCF_CI": "1",
        "MPLBACKEND": "Agg",
    }


def apply_offline_environment(*, storage: Path) -> None:
    """Put the offline variables into this process's environment (kept if already set)."""
    for key, value in offline_environment(storage=storage).items():
        os.environ.setdefault(key, value)
    os.environ.pop("ULTRALYTICS_API_KEY", None)
    Path(os.environ["YOLO_CONFIG_DIR"]).mkdir(parents=True, exist_ok=True)


def make_ultralytics_silent(*, storage: Path) -> None:
    """Import ultralytics offline and switch off everything that could reach the network."""
    apply_offline_environment(storage=storage)

    import ultralytics.utils as ul_utils
    from ultralytics.engine import trainer as ul_trainer
    from ultralytics.nn import tasks as ul_tasks
    from ultralytics.utils import checks as ul_checks
    from ultralytics.utils import events as ul_events

    # If something imported ultralytics before the environment was set, these module
    # constants were computed online; force them now.
    ul_utils.ONLINE = False
    ul_checks.AUTOINSTALL = False
    ul_events.ONLINE = False
    ul_tasks.SAFE_LOAD = True  # checkpoints (resume, fine-tune, inference) load weights_only
    settings = {key: False for key in _INTEGRATIONS}
    settings.update(sync=False, api_key="")
    if any(ul_utils.SETTINGS.get(key) != value for key, value in settings.items()):
        ul_utils.SETTINGS.update(settings)
    events = getattr(ul_events, "events", None)
    if events is not None:
        events.enabled = False
    # The trainer's AMP self-test downloads yolo26n.pt on CUDA; replace it with a check
    # that decides from the device name alone, as ultralytics does for known-bad GPUs.
    ul_trainer.check_amp = _offline_amp_check
    # Reading a dataset "checks" for Arial.ttf and fetches it from GitHub when missing,
    # and so does every plot that draws text with Pillow (an evaluation's validation
    # batches). Never fetch it: a copy in ultralytics' config folder if someone put one
    # there, else the DejaVu Sans that matplotlib (a dependency) ships. ADR 0042.
    from ultralytics.data import utils as ul_data_utils
    from ultralytics.utils import plotting as ul_plotting

    ul_data_utils.check_font = _local_font_only
    ul_plotting.check_font = _local_font_only


def _local_font_only(font: str = "Arial.ttf") -> Path:
    from ultralytics.utils import USER_CONFIG_DIR

    file = Path(USER_CONFIG_DIR) / Path(font).name
    return file if file.exists() else installed_font()


def installed_font() -> Path:
    """DejaVu Sans as matplotlib installs it: a TrueType font that is always there."""
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"


def _offline_amp_check(model: Any) -> bool:
    import re

    import torch

    device = next(model.parameters()).device
    if device.type != "cuda":
        return False
    bad = re.compile(
        r"(nvidia|geforce|quadro|tesla).*?(1660|1650|1630|t400|t550|t600|t1000|t1200|t2000|k40m)",
        re.IGNORECASE,
    )
    return not bad.search(torch.cuda.get_device_name(device))
