"""Files sent from disk in chunks, never whole in memory, reporting bytes as they go."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

Progress = Callable[[int, int], None]  # (bytes sent so far, total bytes)


class ProgressFile(io.RawIOBase):
    """A read-only file that calls `progress(sent, total)` after each read.

    httpx's multipart encoder reads file objects in chunks and measures them with
    seek/tell, so the body is streamed with a Content-Length and never held whole.
    """

    def __init__(self, path: Path, progress: Progress | None = None) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - closed with this object
        self.name = str(path)
        self.total = os.fstat(self._file.fileno()).st_size
        self._progress = progress
        self._sent = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        position = self._file.seek(offset, whence)
        if whence == io.SEEK_SET and offset == 0:
            self._sent = 0  # a retry sends the body again from the start
        return position

    def tell(self) -> int:
        return self._file.tell()

    def fileno(self) -> int:
        return self._file.fileno()

    def read(self, size: int = -1) -> bytes:
        chunk = self._file.read(size)
        self._sent += len(chunk)
        if self._progress is not None and chunk:
            self._progress(self._sent, self.total)
        return chunk

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        chunk = self.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def close(self) -> None:
        self._file.close()
        super().close()
