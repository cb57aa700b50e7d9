"""Zips for the dataset upload corpus: one good dataset and each kind of bad one."""

from __future__ import annotations

import io
import random
import stat
import struct
import zipfile
import zlib
from pathlib import Path

from PIL import Image

NAMES_YAML = "names:\n  0: square\n  1: disc\n"


def png(*, size: int = 32, colour: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def png_bomb(*, side: int = 13_000) -> bytes:
    """A real, valid PNG of side x side pixels in about 20 KB: one bit a pixel, all zero,
    decoding to side² bytes or more (13,000² is 169 MP)."""
    buffer = io.BytesIO()
    Image.new("1", (side, side)).save(buffer, format="PNG")
    return buffer.getvalue()


def png_header_only(*, width: int, height: int) -> bytes:
    """A PNG signature and IHDR declaring width x height, and no pixel data at all: only a
    reader that trusts the header without decoding can say how large it is."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def noise_comment(n: int) -> str:
    """A YAML comment that does not compress (so only its size can refuse it)."""
    return "# " + random.Random(0).randbytes(n // 2).hex() + "\n"


def write_zip(path: Path, files: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def good_files(*, splits: tuple[str, ...] = ("train", "val"), per_split: int = 3) -> dict:
    files: dict[str, bytes | str] = {"data.yaml": NAMES_YAML}
    for n, split in enumerate(splits):
        for i in range(per_split):
            # A colour of its own per image: no image is in two splits (that is a warning).
            files[f"images/{split}/{split}_{i}.png"] = png(colour=(10 * i, 100 + 40 * n, 50))
            files[f"labels/{split}/{split}_{i}.txt"] = "0 0.5 0.5 0.25 0.25\n1 0.2 0.3 0.1 0.1\n"
    return files


def good_zip(path: Path, **kwargs: object) -> Path:
    return write_zip(path, good_files(**kwargs))  # type: ignore[arg-type]


def labels_moved(files: dict, *, to: str) -> dict:
    """The same files with every `labels/` folder renamed `to` (e.g. `annotations/`), or,
    with `to="images"`, each label put beside its image."""
    moved = {}
    for name, data in files.items():
        if name.startswith("labels/"):
            name = to + name[len("labels") :]
        moved[name] = data
    return moved


def with_label(path: Path, line: str) -> Path:
    files = good_files()
    files["labels/train/train_1.txt"] = f"0 0.5 0.5 0.2 0.2\n{line}\n"
    return write_zip(path, files)


def symlink_zip(path: Path) -> Path:
    files = good_files()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        link = zipfile.ZipInfo("images/train/evil.png")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    return path


def special_file_zip(path: Path) -> Path:
    files = good_files()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        fifo = zipfile.ZipInfo("images/train/pipe")
        fifo.external_attr = (stat.S_IFIFO | 0o644) << 16
        archive.writestr(fifo, "")
    return path


def bomb_zip(path: Path, *, megabytes: int = 4) -> Path:
    files = good_files()
    files["images/train/zeros.bin"] = b"\0" * (megabytes * 1024 * 1024)
    return write_zip(path, files)


def too_many_files_zip(path: Path, *, extra: int) -> Path:
    files = good_files()
    for i in range(extra):
        files[f"notes/{i}.txt"] = "x"
    return write_zip(path, files)


def truncated_zip(path: Path) -> Path:
    good_zip(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path
