"""Safe extraction of an uploaded zip: refuse anything that could escape or explode.

Refused: absolute paths, `..`, symlinks, special files, encrypted members; more files,
more uncompressed bytes or a higher compression ratio than the caps allow. Sizes are
counted while reading too, because a zip's headers can lie about them.
"""

from __future__ import annotations

import re
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from datasets.report import Report

_CHUNK = 1024 * 1024
# Small members (labels, yaml) compress very well legitimately; judge ratios on big ones.
_RATIO_MIN_BYTES = 64 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class ExtractionLimits:
    max_uncompressed_bytes: int
    max_files: int
    max_ratio: float


class ArchiveRefused(Exception):
    """The archive cannot be extracted safely; the report says why."""


def archive_extract(*, archive: Path, dest: Path, limits: ExtractionLimits, report: Report) -> None:
    """Extract `archive` into `dest` (which must not exist) or record why not and raise."""
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        report.problem(code="not_a_zip", message=f"the upload is not a readable zip file: {exc}")
        raise ArchiveRefused from exc
    with zf:
        members = _checked_members(zf, limits=limits, report=report)
        if not report.valid:
            raise ArchiveRefused
        dest.mkdir(parents=True)
        try:
            _extract_members(zf, members, dest=dest, limits=limits, report=report)
        except (zipfile.BadZipFile, EOFError, NotImplementedError, OSError) as exc:
            report.problem(code="corrupt_archive", message=f"the zip file cannot be read: {exc}")
            raise ArchiveRefused from exc


def _member_path(name: str) -> PurePosixPath | None:
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return None
    parts = [p for p in re.split(r"[\\/]", name) if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return PurePosixPath(*parts)


def _checked_members(
    zf: zipfile.ZipFile, *, limits: ExtractionLimits, report: Report
) -> list[tuple[zipfile.ZipInfo, PurePosixPath]]:
    members: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
    total = 0
    compressed = 0
    for info in zf.infolist():
        name = info.filename
        path = _member_path(name)
        if path is None:
            absolute = name.startswith(("/", "\\")) or _DRIVE.match(name)
            code = "absolute_path" if absolute else "path_traversal"
            report.problem(code=code, message="member path escapes the dataset folder", file=name)
            continue
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            report.problem(code="symlink", message="symbolic links are not allowed", file=name)
            continue
        # Zips written without Unix file types carry permission bits only: regular files.
        if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
            report.problem(code="special_file", message="special files are not allowed", file=name)
            continue
        if info.flag_bits & 0x1:
            report.problem(code="encrypted", message="encrypted members are not allowed", file=name)
            continue
        if info.is_dir():
            continue
        members.append((info, path))
        total += info.file_size
        compressed += info.compress_size
        if info.file_size > _RATIO_MIN_BYTES and info.file_size > limits.max_ratio * max(
            info.compress_size, 1
        ):
            report.problem(
                code="compression_ratio",
                message=f"compression ratio above {limits.max_ratio:g}",
                file=name,
            )
    if len(members) > limits.max_files:
        report.problem(
            code="too_many_files",
            message=f"{len(members)} files; at most {limits.max_files} are allowed",
        )
    if total > limits.max_uncompressed_bytes:
        report.problem(
            code="too_large_uncompressed",
            message=f"{total} bytes uncompressed; at most {limits.max_uncompressed_bytes}",
        )
    if total > _RATIO_MIN_BYTES and total > limits.max_ratio * max(compressed, 1):
        report.problem(
            code="compression_ratio",
            message=f"overall compression ratio above {limits.max_ratio:g}",
        )
    return members


def _extract_members(
    zf: zipfile.ZipFile,
    members: list[tuple[zipfile.ZipInfo, PurePosixPath]],
    *,
    dest: Path,
    limits: ExtractionLimits,
    report: Report,
) -> None:
    written = 0
    for info, rel in members:
        target = dest.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        member_written = 0
        with zf.open(info) as src, open(target, "xb") as out:
            while chunk := src.read(_CHUNK):
                member_written += len(chunk)
                written += len(chunk)
                if member_written > info.file_size or written > limits.max_uncompressed_bytes:
                    report.problem(
                        code="too_large_uncompressed",
                        message="the member holds more bytes than its header declares",
                        file=info.filename,
                    )
                    raise ArchiveRefused
                out.write(chunk)


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
