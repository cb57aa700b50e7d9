"""A job log's lines are plain text: no terminal escape codes, no redrawn progress bars."""

from __future__ import annotations

import pytest
from jobs.log_text import log_line_plain


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("\x1b[34m\x1b[1mengine/trainer: \x1b[0mok", "engine/trainer: ok"),
        ("plain text stays", "plain text stays"),
        ("erase\x1b[K to the end", "erase to the end"),
        ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),
        ("\x1b]0;a window title\x07after", "after"),
        ("\x1b]8;;http://example.invalid\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("  1/10  10%|#   | 1/10\r  1/10 100%|####| 10/10", "  1/10 100%|####| 10/10"),
        ("a windows line\r", "a windows line"),
    ],
)
def test_a_log_line_loses_its_escape_codes_and_shows_its_last_redraw(raw, plain):
    assert log_line_plain(raw) == plain


def test_a_line_without_escapes_is_returned_unchanged():
    line = "Epoch 3/10 box_loss=1.25 [a] (b) \\x1b is text here"
    assert log_line_plain(line) == line
