"""A job log's lines as people read them: ultralytics writes terminal colour codes and
progress bars redrawn with carriage returns, which mean nothing outside a terminal."""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves, "erase line"), OSC sequences (titles, links) and
# the remaining two-character escapes, as ECMA-48 defines them.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: ESC [ parameters intermediates final
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: ESC ] text BEL-or-ST
    r"|\x1b[@-Z\\-_]"  # Fe: ESC and one character
)


def log_line_plain(line: str) -> str:
    """The line without escape codes; of a line redrawn with carriage returns (a progress
    bar), only what the terminal would show last."""
    text = _ESCAPES.sub("", line).rstrip("\r")
    return text.rsplit("\r", 1)[-1]
