"""Videos and zips of images as inference input, and the annotated video as output.

Checked at submit, so bad input gets a clear error and no job: a video OpenCV cannot
decode, that runs past its limit or whose frames are over the pixel cap; a zip with a
name that would land outside its folder (zip-slip: absolute, `..`, backslashes), with
anything but images in it, too big once unpacked, a member that inflates like a bomb, or
an image over the pixel cap. The API process never decodes media: a zip's images are
measured from their headers, read from the zip as a stream, and a video is opened and
its first frame decoded in a child process (`video_probe.py`), so a hostile file costs
the API process a few megabytes at most (ADR 0030). The worker then unpacks or samples
into the job's folder and infers over plain image files, like any other job.

OpenCV here is the pip build without an H.264 encoder, so the annotated video is
written twice: an `.mp4` (MPEG-4 part 2) to download and a `.webm` (VP8) that
browsers play (ADR 0030).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gpu_service import errors
from gpu_service.storage import inside_storage
from gpu_service.workloads.infer import pixels

VIDEO_SUFFIXES = {".mp4", ".webm", ".avi"}
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}
ARCHIVE_MAX_IMAGES = 1000
ARCHIVE_MAX_BYTES = 2 * 1024**3  # unpacked, all members together
# A member may unpack to at most this many times its packed size: the rule and the cap of
# a dataset upload (the web's CARRIL_DATASET_MAX_RATIO, web/datasets/extraction.py).
# Images are compressed already, so one that inflates 200-fold is mostly zeros.
ARCHIVE_MAX_RATIO = 200
# ...judged on members larger than this: small files compress well legitimately.
ARCHIVE_RATIO_MIN_BYTES = 64 * 1024
# An image within the pixel cap needs at most 8 bytes a pixel (16-bit RGBA, stored
# uncompressed); a member that declares more is not an image we would infer on.
ARCHIVE_BYTES_PER_PIXEL = 8
# The child process that opens a video and decodes its first frame gets this long.
VIDEO_PROBE_TIMEOUT_S = 30.0


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
    limit = pixels.max_pixels()
    info = probe_video(video, max_pixels=limit)
    if info is None:
        raise _refuse(field, "the video cannot be decoded", path=path, reason="undecodable")
    if info.width * info.height > limit:
        raise _too_large(
            field, "its frames are", width=info.width, height=info.height, limit=limit, path=path
        )
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


def probe_video(path: Path, *, max_pixels: int) -> VideoInfo | None:
    """Frame rate, frame count and frame size, or None when the video does not open or its
    first frame does not decode. Asked of a child process (`video_probe.py`): decoding a
    frame of 7000 x 6000 takes 300 MB, and FFmpeg's demuxers and decoders are not code
    the API process should run on a stranger's file. The child reads the frame size the
    container declares and decodes nothing when it is over `max_pixels`."""
    script = Path(__file__).with_name("video_probe.py")
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(script), str(path), str(max_pixels)],
            capture_output=True,
            timeout=VIDEO_PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    try:
        found = json.loads(done.stdout)
    except ValueError:  # the child died (a decoder crash, killed for memory)
        return None
    if done.returncode != 0 or not found.get("opened"):
        return None
    fps, frames = float(found["fps"]), int(found["frames"])
    if fps <= 0 or frames <= 0:
        return None
    width, height = int(found["width"]), int(found["height"])
    if width * height <= max_pixels and not found.get("decoded"):
        return None
    return VideoInfo(fps=fps, frames=frames, seconds=frames / fps, width=width, height=height)


def check_archive(*, path: str, storage: Path) -> list[zipfile.ZipInfo]:
    """Every entry of the zip is an image with a safe name, a sane size and a header within
    the pixel cap; the image entries. Sizes and ratios are judged from the zip's listing,
    and each member is then read as a stream only as far as its image header: nothing is
    unpacked and nothing decoded. Python's zipfile stops a member at the size its listing
    declares, so the listing is what a later unpack gets."""
    field = "archive"
    archive = inside_storage(path=path, storage=storage, field=field)
    if not archive.is_file():
        raise errors.FileMissing(f"{field}: {path} does not exist", details={"field": field})
    if not zipfile.is_zipfile(archive):
        raise _refuse(field, "not a zip file", reason="not_zip")
    limit = pixels.max_pixels()
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
            _member_check(info, max_pixels=limit)
        for info in entries:
            width, height = _member_size(zf, info)
            if width * height > limit:
                raise _too_large(
                    field,
                    f"{info.filename!r} is",
                    width=width,
                    height=height,
                    limit=limit,
                    member=info.filename,
                )
    return entries


def _member_check(info: zipfile.ZipInfo, *, max_pixels: int) -> None:
    """The member's declared size and compression ratio, before a byte of it is read."""
    ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size > ARCHIVE_RATIO_MIN_BYTES and ratio > ARCHIVE_MAX_RATIO:
        raise _refuse(
            "archive",
            f"{info.filename!r} unpacks to {ratio:,.0f} times its packed size; "
            f"at most {ARCHIVE_MAX_RATIO} (a decompression bomb?)",
            reason="compression_ratio",
            member=info.filename,
        )
    most = max_pixels * ARCHIVE_BYTES_PER_PIXEL
    if info.file_size > most:
        raise _refuse(
            "archive",
            f"{info.filename!r} unpacks to {info.file_size:,} bytes; an image within "
            f"{max_pixels:,} pixels (CARRIL_INFER_MAX_PIXELS) takes at most {most:,}",
            reason="member_too_big",
            member=info.filename,
        )


def _member_size(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[int, int]:
    """The member's width and height from its image header, read as a stream."""
    try:
        with zf.open(info) as member:
            return pixels.declared_size(member)
    # Any failure to read a header is a refusal (where ultralytics is imported, it patches
    # Image.open to try pi_heif, not installed, on files Pillow does not know: ImportError).
    except Exception as exc:
        problem = str(exc) if isinstance(exc, pixels.HeaderTooLong) else "not a readable image"
        raise _refuse(
            "archive", f"{problem}: {info.filename!r}", reason="not_image", member=info.filename
        ) from None


def _too_large(
    field: str, what: str, *, width: int, height: int, limit: int, **details: Any
) -> errors.ImageTooLarge:
    pixel_count = width * height
    return errors.ImageTooLarge(
        f"{field}: {what} {width} x {height} pixels ({pixel_count:,}); "
        f"the limit is {limit:,} (CARRIL_INFER_MAX_PIXELS)",
        details={
            "field": field,
            "width": width,
            "height": height,
            "pixels": pixel_count,
            "max_pixels": limit,
            **details,
        },
    )


def _safe_name(name: str) -> bool:
    pure = PurePosixPath(name)
    return not (
        "\\" in name or pure.is_absolute() or ".." in pure.parts or ":" in (pure.parts or [""])[0]
    )


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
            with zf.open(info) as member, open(out, "wb") as file:
                shutil.copyfileobj(member, file)
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
