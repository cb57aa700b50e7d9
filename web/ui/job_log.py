"""A cancelled job's log, as its page shows it: stopping a worker on request can end its
log with a Python traceback, which would read as the job's failure. The traceback is
folded away (the page offers it below, and the API's logs keep every line)."""

from __future__ import annotations

TRACEBACK = "Traceback (most recent call last):"
FOLDED = "(stopped on request: the worker's traceback from the stop is folded below)"


def _traceback_end(lines: list[str], start: int) -> int:
    """Index after a traceback block: its indented frames, then the exception's line."""
    index = start + 1
    while index < len(lines) and (lines[index][:1] in {" ", "\t"} or not lines[index]):
        index += 1
    return min(index + 1, len(lines))  # the exception line ("KeyboardInterrupt") too


def log_folded(*, lines: list[str], state: str) -> tuple[list[str], list[str]]:
    """(the lines to show, the traceback lines folded away). Only a cancelled job's
    tracebacks are folded: a failed job's traceback is what its reader needs."""
    if state != "cancelled":
        return lines, []
    shown: list[str] = []
    folded: list[str] = []
    index = 0
    while index < len(lines):
        if TRACEBACK in lines[index]:
            end = _traceback_end(lines, index)
            folded.extend(lines[index:end])
            if not shown or shown[-1] != FOLDED:
                shown.append(FOLDED)
            index = end
            continue
        shown.append(lines[index])
        index += 1
    return shown, folded
