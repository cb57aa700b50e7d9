"""Videos and zips as inference input: bad ones refused at submit, good ones inferred."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from gpu_service import errors
from gpu_service.workloads import weights
from gpu_service.workloads.infer.run import infer_job
from gpu_service.workloads.infer.spec import InferSpec, check_infer


def make_video(path: Path, *, frames: int = 20, fps: float = 10.0, size: int = 96) -> Path:
    import cv2
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (size, size))
    for i in range(frames):
        frame = np.full((size, size, 3), 30, np.uint8)
        x = 5 + 3 * i
        cv2.rectangle(frame, (x, 30), (x + 20, 60), (40, 200, 250), -1)
        writer.write(frame)
    writer.release()
    return path


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def png_bytes() -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ultralytics import YOLO

    path = tmp_path_factory.mktemp("media-ckpt") / "m.pt"
    YOLO("yolov8n.yaml").save(str(path))
    return path


@pytest.fixture
def fingerprint(storage: Path, checkpoint: Path) -> str:
    return weights.import_weights(src=checkpoint, storage=storage)["fingerprint"]


def _spec(fingerprint: str, **source) -> InferSpec:
    return InferSpec.model_validate(
        {"model": fingerprint, "conf": 0.0, "imgsz": 64, "max_det": 3, **source}
    )


def _refusal(storage: Path, spec: InferSpec) -> errors.CarrilError:
    with pytest.raises(errors.CarrilError) as caught:
        check_infer(spec, storage)
    return caught.value


def test_exactly_one_source_is_accepted(fingerprint: str) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        _spec(fingerprint)
    with pytest.raises(ValueError, match="exactly one"):
        _spec(fingerprint, images=["a.jpg"], archive="b.zip")


def test_an_undecodable_video_is_refused_at_submit(storage: Path, fingerprint: str) -> None:
    (storage / "uploads").mkdir()
    (storage / "uploads" / "broken.mp4").write_bytes(b"\x00not a video" * 100)

    error = _refusal(storage, _spec(fingerprint, video={"path": "uploads/broken.mp4"}))

    assert error.code == "VALIDATION_ERROR"
    assert error.details["reason"] == "undecodable"
    assert "cannot be decoded" in error.message


def test_a_video_past_its_duration_limit_is_refused(storage: Path, fingerprint: str) -> None:
    make_video(storage / "uploads" / "long.mp4", frames=30, fps=10.0)  # 3 s

    spec = _spec(fingerprint, video={"path": "uploads/long.mp4", "max_seconds": 2})
    error = _refusal(storage, spec)

    assert error.details["reason"] == "too_long"
    assert "3.0 s long; the limit is 2 s" in error.message


@pytest.mark.parametrize(
    ("name", "reason"),
    [("../escape.png", "zip_slip"), ("/etc/x.png", "zip_slip"), ("a\\..\\b.png", "zip_slip")],
)
def test_a_zip_with_a_name_outside_its_folder_is_refused(
    storage: Path, fingerprint: str, name: str, reason: str
) -> None:
    make_zip(storage / "uploads" / "bad.zip", {"ok.png": png_bytes(), name: png_bytes()})

    error = _refusal(storage, _spec(fingerprint, archive="uploads/bad.zip"))

    assert error.details["reason"] == reason


def test_a_zip_with_something_that_is_not_an_image_is_refused(
    storage: Path, fingerprint: str
) -> None:
    make_zip(storage / "uploads" / "a.zip", {"ok.png": png_bytes(), "notes.txt": b"hi"})
    make_zip(storage / "uploads" / "b.zip", {"ok.png": png_bytes(), "fake.jpg": b"<html>"})

    for name in ("a.zip", "b.zip"):
        error = _refusal(storage, _spec(fingerprint, archive=f"uploads/{name}"))
        assert error.details["reason"] == "not_image"


def test_the_probe_the_web_asks_at_submit_reads_a_video_or_zip_and_refuses_as_submit_does(
    storage: Path,
) -> None:
    from gpu_service.workloads.infer.media import check_media

    make_video(storage / "uploads" / "clip.mp4", frames=20, fps=10.0, size=96)
    make_zip(storage / "uploads" / "imgs.zip", {"a.png": png_bytes(), "b.png": png_bytes()})
    (storage / "uploads" / "broken.avi").write_bytes(b"RIFF not a video" * 50)

    video = check_media(path="uploads/clip.mp4", max_seconds=60, storage=storage)
    assert video == {
        "kind": "video",
        "fps": 10.0,
        "frames": 20,
        "seconds": 2.0,
        "width": 96,
        "height": 96,
    }
    assert check_media(path="uploads/imgs.zip", max_seconds=60, storage=storage) == {
        "kind": "archive",
        "images": 2,
    }
    for path, max_seconds, reason in (
        ("uploads/broken.avi", 60, "undecodable"),
        ("uploads/clip.mp4", 1, "too_long"),
    ):
        with pytest.raises(errors.ValidationFailed) as refused:
            check_media(path=path, max_seconds=max_seconds, storage=storage)
        assert refused.value.details["reason"] == reason


def test_a_zip_of_images_gives_one_result_per_image(
    make_context, storage: Path, fingerprint: str
) -> None:
    make_zip(
        storage / "uploads" / "imgs.zip",
        {"a/one.png": png_bytes(), "two.png": png_bytes(), "folder/": b""},
    )
    spec = _spec(fingerprint, archive="uploads/imgs.zip")
    check_infer(spec, storage)

    result = infer_job(ctx=make_context(kind="infer", spec=spec.model_dump()))

    assert [Path(i["source"]).name for i in result["images"]] == ["0000-one.png", "0001-two.png"]
    assert all(Path(i["source"]).parent.name == "inputs" for i in result["images"])
    assert result["video"] is None


def test_a_short_video_yields_an_annotated_video_and_per_frame_detections(
    make_context, storage: Path, fingerprint: str
) -> None:
    import cv2

    make_video(storage / "uploads" / "clip.mp4", frames=20, fps=10.0)  # 2 s
    spec = _spec(fingerprint, video={"path": "uploads/clip.mp4", "fps": 5})
    check_infer(spec, storage)

    result = infer_job(ctx=make_context(kind="infer", spec=spec.model_dump()))

    video = result["video"]
    assert [f["index"] for f in video["frames"]] == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]
    assert [f["time_s"] for f in video["frames"]][:3] == [0.0, 0.2, 0.4]
    assert all(f["count"] == 3 for f in video["frames"])  # conf 0, max_det 3
    assert len(result["images"]) == 10
    for key in ("annotated_video", "annotated_webm"):
        capture = cv2.VideoCapture(video[key])
        decoded = 0
        while capture.read()[0]:
            decoded += 1
        capture.release()
        assert decoded == 10, key
    per_frame = json.loads(Path(video["detections_path"]).read_text())
    assert [f["index"] for f in per_frame] == [f["index"] for f in video["frames"]]
    assert all(len(f["detections"]) == 3 for f in per_frame)


def test_frames_are_capped_at_max_frames(make_context, storage: Path, fingerprint: str) -> None:
    make_video(storage / "uploads" / "clip.mp4", frames=20, fps=10.0)
    spec = _spec(fingerprint, video={"path": "uploads/clip.mp4", "fps": 10, "max_frames": 4})

    result = infer_job(ctx=make_context(kind="infer", spec=spec.model_dump()))

    assert [f["index"] for f in result["video"]["frames"]] == [0, 1, 2, 3]
