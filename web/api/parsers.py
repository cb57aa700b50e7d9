"""The API's JSON parser: DRF's, with a limit on how deeply a body may nest.

Python's json module parses nested arrays and objects by recursion: a body of a
thousand `[` (two kilobytes, no account needed on the token endpoint) reached the
interpreter's recursion limit and answered 500 with a traceback in the log, and one a
little shallower parsed, only to exhaust the stack later in a serializer or a renderer.
No body this API takes nests more than a few levels, so anything deeper than
`JSON_MAX_DEPTH` is refused with 400 VALIDATION_ERROR before json.loads sees it.
"""

from __future__ import annotations

import io
import re
from typing import Any

from carril_web.errors import ValidationFailed
from rest_framework.parsers import JSONParser

# The one definition of the limit (docs/api-errors.md, VALIDATION_ERROR). The deepest
# body the API takes (a promotion with its `require`) nests two levels.
JSON_MAX_DEPTH = 32

# A JSON string (its escapes included) or one bracket; strings are skipped whole, so a
# bracket inside one is not counted.
_STRING_OR_BRACKET = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def json_depth_exceeds(raw: bytes, *, limit: int = JSON_MAX_DEPTH) -> bool:
    """Whether a JSON text nests arrays and objects more than `limit` deep. Iterative:
    it never recurses, whatever it is given; malformed text is left to json.loads."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False  # cannot be deeper than its number of openings
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token in (b"]", b"}"):
            depth -= 1
    return False


def _too_deep() -> ValidationFailed:
    return ValidationFailed(
        f"The JSON body nests deeper than {JSON_MAX_DEPTH} levels.",
        details={"reason": "too_deep", "max_depth": JSON_MAX_DEPTH},
    )


class DepthLimitedJSONParser(JSONParser):
    """REST_FRAMEWORK's default JSON parser (settings.DEFAULT_PARSER_CLASSES)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = stream.read()
        if json_depth_exceeds(raw):
            raise _too_deep()
        try:
            return super().parse(io.BytesIO(raw), media_type, parser_context)
        except RecursionError as exc:
            # An encoding the scan above does not read byte by byte (UTF-16, UTF-32).
            raise _too_deep() from exc
