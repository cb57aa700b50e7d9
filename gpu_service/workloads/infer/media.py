"""Videos and zips of images as inference input, and the annotated video as output.

Checked at submit, in the API process, so bad input gets a clear error and no job:
a video OpenCV cannot decode or that runs past its limit, a zip with a name that
would land outside its folder (zip-slip: absolute, `..`, backslashes), with anything
but images in it, or too big once unpacked. The worker then unpacks or samples into
the job's folder and infers over plain image files, like any other job.

OpenCV here is the pip build without an H.264 encoder, so the annotated video is
written twice: an `.mp4` (MPEG-4 part 2) to download and a `.webm` (VP8) that
browsers play (ADR 0030).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gpu_service import errors
from gpu_service.storage import inside_storage

VIDEO_SUFFIXES = {".mp4", ".webm", ".avi"}
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}
ARCHIVE_MAX_IMAGES = 1000
ARCHIVE_MAX_BYTES = 2 * 1024**3  # unpacked


@dataclass(frozen=True)
class VideoInfo:
    fps: float
    frames: int
    seconds: float
    width: int
    height: int


def _refuse(field: str, message: str, **details: Any) -> errors.ValidationFailed:
    return errors.ValidationFailed(f"{field}: {message}", details={"field": field, **details})


def check_video(*, path: str, max_seconds: float, storage: Path) -> VideoInfo:
    """The video decodes and is within its duration limit; its properties."""
    field = "video.path"
    video = inside_storage(path=path, storage=storage, field=field)
    if not video.is_file():
        raise errors.FileMissing(f"{field}: {path} does not exist", details={"field": field})
    if video.suffix.lower() not in VIDEO_SUFFIXES:
        raise _refuse(field, "must be an mp4, webm or avi file", path=path, reason="not_video")
    info = probe_video(video)
    if info is None:
        raise _refuse(field, "the video cannot be decoded", path=path, reason="undecodable")
    if info.seconds > max_seconds:
        raise _refuse(
            field,
            f"the video is {info.seconds:.1f} s long; the limit is {max_seconds:g} s",
            reason="too_long",
            seconds=round(info.seconds, 3),
        )
    return info


def check_media(*, path: str, max_seconds: float, storage: Path) -> dict[str, Any]:
    """What the web asks before it creates an inference job over a video or a zip
    (`POST /v1/media/probe`, ADR 0048): the same checks as the infer kind's submit, so the
    web, which has no OpenCV, refuses what the GPU service would refuse, and no job is
    created. The media's properties, or a ValidationFailed with `details.reason`."""
    if PurePosixPath(path).suffix.lower() == ".zip":
        return {"kind": "archive", "images": len(check_archive(path=path, storage=storage))}
    info = check_video(path=path, max_seconds=max_seconds, storage=storage)
    return {
        "kind": "video",
        "fps": info.fps,
        "frames": info.frames,
        "seconds": info.seconds,
        "width": info.width,
        "height": info.height,
    }


def probe_video(path: Path) -> VideoInfo | None:
    """Frame rate, frame count and size, or None when the first frame does not decode."""
    import cv2

    capture = cv2.VideoCapture(str(path))
    try:
        if not capture.isOpened():
            return None
        ok, frame = capture.read()
        if not ok or frame is None:
            return None
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        frames = int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        if fps <= 0 or frames <= 0:
            return None
        height, width = frame.shape[:2]
        return VideoInfo(fps=fps, frames=frames, seconds=frames / fps, width=width, height=height)
    finally:
        capture.release()


def check_archive(*, path: str, storage: Path) -> list[zipfile.ZipInfo]:
    """Every entry of the zip is an image with a safe name; the image entries."""
    field = "archive"
    archive = inside_storage(path=path, storage=storage, field=field)
    if not archive.is_file():
        raise errors.FileMissing(f"{field}: {path} does not exist", details={"field": field})
    if not zipfile.is_zipfile(archive):
        raise _refuse(field, "not a zip file", reason="not_zip")
    with zipfile.ZipFile(archive) as zf:
        entries = [info for info in zf.infolist() if not info.is_dir()]
        for info in entries:
            if not _safe_name(info.filename):
                raise _refuse(
                    field, f"unsafe name in the zip: {info.filename!r}", reason="zip_slip"
                )
            if PurePosixPath(info.filename).suffix.lower() not in IMAGE_SUFFIXES:
                raise _refuse(field, f"not an image: {info.filename!r}", reason="not_image")
        if not entries:
            raise _refuse(field, "the zip holds no images", reason="empty")
        if len(entries) > ARCHIVE_MAX_IMAGES:
            raise _refuse(field, f"more than {ARCHIVE_MAX_IMAGES} images", reason="too_many")
        if sum(info.file_size for info in entries) > ARCHIVE_MAX_BYTES:
            raise _refuse(field, "too big once unpacked", reason="too_big")
        for info in entries:
            if not _is_image(zf.read(info)):
                raise _refuse(field, f"not a readable image: {info.filename!r}", reason="not_image")
    return entries


def _safe_name(name: str) -> bool:
    pure = PurePosixPath(name)
    return not (
        "\\" in name or pure.is_absolute() or ".." in pure.parts or ":" in (pure.parts or [""])[0]
    )


def _is_image(data: bytes) -> bool:
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
    # ImportError: where ultralytics is imported it patches Image.open to try pi_heif
    # (not installed) on files Pillow does not know.
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, ImportError):
        return False
    return True


def unpack_archive(*, path: str, storage: Path, target: Path) -> list[Path]:
    """The zip's images written under `target` with numbered names (never the zip's own
    paths); checked again here, as the file may have changed since submit."""
    entries = check_archive(path=path, storage=storage)
    archive = inside_storage(path=path, storage=storage, field="archive")
    target.mkdir(parents=True, exist_ok=True)
    written = []
    with zipfile.ZipFile(archive) as zf:
        for number, info in enumerate(entries):
            name = PurePosixPath(info.filename).name
            out = target / f"{number:04d}-{name}"
            out.write_bytes(zf.read(info))
            written.append(out)
    return written


@dataclass(frozen=True)
class Frame:
    index: int  # frame number in the source
    time_s: float
    path: Path


def sample_frames(*, path: str, options: Any, storage: Path, target: Path) -> list[Frame]:
    """Frames taken every 1/fps seconds (at most max_frames) as JPEGs under `target`."""
    import cv2

    info = check_video(path=path, max_seconds=options.max_seconds, storage=storage)
    video = inside_storage(path=path, storage=storage, field="video.path")
    target.mkdir(parents=True, exist_ok=True)
    step = max(info.fps / options.fps, 1.0)
    frames: list[Frame] = []
    capture = cv2.VideoCapture(str(video))
    try:
        index, next_pick = 0, 0.0
        while len(frames) < options.max_frames:
            ok, image = capture.read()
            if not ok:
                break
            if index >= next_pick:
                out = target / f"frame-{index:06d}.jpg"
                cv2.imwrite(str(out), image)
                frames.append(Frame(index=index, time_s=round(index / info.fps, 3), path=out))
                next_pick += step
            index += 1
    finally:
        capture.release()
    if not frames:
        raise _refuse("video.path", "no frame could be decoded", reason="undecodable")
    return frames


def write_videos(*, images: list[Path], fps: float, target: Path) -> tuple[Path, Path]:
    """`target.mp4` and `target.webm` from same-sized images, at `fps`."""
    import cv2

    first = cv2.imread(str(images[0]))
    height, width = first.shape[:2]
    outputs = []
    for suffix, codec in ((".mp4", "mp4v"), (".webm", "VP80")):
        out = target.with_suffix(suffix)
        writer = cv2.VideoWriter(str(out), cv2.VideoWriter_fourcc(*codec), fps, (width, height))
        if not writer.isOpened():
            raise errors.CarrilError(f"OpenCV cannot write {suffix} video ({codec})")
        try:
            for image_path in images:
                frame = cv2.imread(str(image_path))
                if frame.shape[:2] != (height, width):
                    frame = cv2.resize(frame, (width, height))
                writer.write(frame)
        finally:
            writer.release()
        outputs.append(out)
    return outputs[0], outputs[1]
