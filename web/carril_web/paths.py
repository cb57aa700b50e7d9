"""Resolving a client-supplied path under a folder, for every route that serves a file.

A path segment from a URL can hold anything a client sends: a NUL byte (which `os.stat`
answers with ValueError, not OSError), control characters, a lone UTF-16 surrogate from
broken UTF-8, a name longer than the file system allows. None of them names a file we
serve, so each is simply "not here" (None), never an exception that becomes a 500.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

# Longer than any name we write (dataset images keep their uploaded names, capped by the
# file system at 255 bytes); refused before the file system is asked.
MAX_SEGMENT_BYTES = 255


def segment_is_plain(segment: str) -> bool:
    """True if `segment` could be a file name we wrote: no NUL, control or format
    characters, no surrogates, not `.` or `..`, not too long once encoded."""
    if not segment or segment in {".", ".."}:
        return False
    try:
        encoded = segment.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    if len(encoded) > MAX_SEGMENT_BYTES:
        return False
    # Cc: control characters (NUL included); Cf: format characters (bidi overrides).
    return not any(unicodedata.category(ch) in {"Cc", "Cf", "Cs"} for ch in segment)


def file_under(*, root: Path, relpath: str) -> Path | None:
    """The regular file `relpath` names inside `root`, or None for anything else.

    Refused: odd segments (above), absolute paths, backslashes, and anything that
    resolves outside `root` (`..`, symlinks).
    """
    if not relpath or relpath.startswith("/") or "\\" in relpath:
        return None
    parts = relpath.split("/")
    if not all(segment_is_plain(part) for part in parts):
        return None
    try:
        base = root.resolve()
        path = base.joinpath(*parts).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
    except (OSError, ValueError):
        return None
    return path
