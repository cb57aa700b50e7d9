"""Records written straight into the database for tests that are not about creating them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from datasets.models import Dataset
from django.contrib.auth.models import User
from registry.models import ModelVersion

from tests.web import dataset_zips as z

# When a job written straight into the database was delivered to the GPU service, which
# knows it by the same id (its folder is jobs/<id>).
DELIVERED = datetime(2026, 1, 1, tzinfo=UTC)


def dataset_for(owner: User, *, name: str = "shapes") -> Dataset:
    """A dataset row with a data.yaml, for tests that are not about datasets."""
    dataset = Dataset.objects.create(owner=owner, name=name, classes=["square", "disc"])
    dataset.path.mkdir(parents=True)
    dataset.data_yaml.write_text("names: [square, disc]\n")
    return dataset


def dataset_uploaded(owner: User, *, name: str = "shapes") -> Dataset:
    """A valid dataset created through the real upload service."""
    import tempfile

    from datasets.services import dataset_create_from_upload
    from django.core.files.uploadedfile import SimpleUploadedFile

    with tempfile.TemporaryDirectory() as folder:
        data = z.good_zip(Path(folder) / "d.zip").read_bytes()
    return dataset_create_from_upload(
        owner=owner, name=name, upload=SimpleUploadedFile("d.zip", data)
    )


def model_version(*, fingerprint: str = "a" * 64, stage: str = "candidate") -> ModelVersion:
    return ModelVersion.objects.create(
        name=f"v-{fingerprint[:6]}",
        fingerprint=fingerprint,
        source="import",
        architecture="yolov8n",
        class_names=["square", "disc"],
        stage=stage,
    )


TRAIN_RESULT = {
    "weights": {"fingerprint": "b" * 64, "path": "/x/weights/bbb.pt"},
    "best_seed": 7,
    "fitness_metric": "fitness",
    "seeds": [
        {
            "seed": 42,
            "fitness": 0.1,
            "metrics": {"mAP50": 0.2},
            "fingerprint": "c" * 64,
            "epochs_run": 2,
        },
        {
            "seed": 7,
            "fitness": 0.3,
            "metrics": {"mAP50": 0.4},
            "fingerprint": "b" * 64,
            "epochs_run": 2,
        },
    ],
    "manifest_path": "/x/jobs/gpu-1/manifest.json",
    "architecture": "yolov8n",
    "class_names": ["square", "disc"],
    "imgsz": 64,
    "task": "detect",
}
