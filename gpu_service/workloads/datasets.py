"""Where a job's files are on shared storage, checked without importing torch.

Everything a job names must resolve inside CARRIL_STORAGE (`storage.inside_storage`):
a spec cannot point a worker at an arbitrary path on the machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpu_service import errors
from gpu_service.storage import inside_storage


def dataset_yaml(*, dataset: str, storage: Path) -> Path:
    """The `data.yaml` of a validated dataset folder on shared storage."""
    folder = inside_storage(path=dataset, storage=storage, field="dataset")
    data_yaml = folder / "data.yaml" if folder.suffix not in {".yaml", ".yml"} else folder
    if not data_yaml.is_file():
        raise errors.FileMissing(
            f"dataset: no data.yaml in {folder}",
            details={"field": "dataset", "path": str(data_yaml)},
        )
    _refuse_download_instructions(data_yaml)
    return data_yaml


def _refuse_download_instructions(data_yaml: Path) -> None:
    """Ultralytics runs a data.yaml's `download` (a URL, a shell line or Python code) when
    the images are missing; a dataset on our storage never needs one, so refuse it."""
    import yaml

    try:
        data = yaml.safe_load(data_yaml.read_text()) or {}
    except yaml.YAMLError as exc:
        raise errors.ValidationFailed(
            f"dataset: data.yaml is not valid YAML: {exc}", details={"field": "dataset"}
        ) from None
    if not isinstance(data, dict):
        raise errors.ValidationFailed(
            "dataset: data.yaml must be a mapping", details={"field": "dataset"}
        )
    if data.get("download"):
        raise errors.ValidationFailed(
            "dataset: data.yaml must not have a download entry", details={"field": "dataset"}
        )


def class_names(*, data_yaml: Path) -> list[str]:
    import yaml

    data: dict[str, Any] = yaml.safe_load(data_yaml.read_text()) or {}
    names = data.get("names") or {}
    if isinstance(names, dict):
        return [str(names[k]) for k in sorted(names, key=int)]
    return [str(n) for n in names]


def splits(*, data_yaml: Path) -> list[str]:
    """The splits a data.yaml names (train, val, test), in that order."""
    import yaml

    data: dict[str, Any] = yaml.safe_load(data_yaml.read_text()) or {}
    return [split for split in ("train", "val", "test") if data.get(split)]


def image_paths(*, images: list[str], storage: Path) -> list[Path]:
    """Each image resolved inside storage; refuses the first that is missing."""
    paths = []
    for index, image in enumerate(images):
        path = inside_storage(path=image, storage=storage, field=f"images[{index}]")
        if not path.is_file():
            raise errors.FileMissing(
                f"images[{index}]: {image} does not exist",
                details={"field": f"images[{index}]", "path": image},
            )
        paths.append(path)
    return paths
