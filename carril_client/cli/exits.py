"""The exit codes scripts and CI branch on (documented in README, "The carril command")."""

from __future__ import annotations

from carril_client.errors import (
    AuthRefused,
    CarrilError,
    Forbidden,
    Unreachable,
)

OK = 0
FAILED = 1  # a job failed, the gate refused, the server refused the request
USAGE = 2  # wrong arguments (click's own code for usage errors)
UNREACHABLE_OR_REFUSED = 3  # the server did not answer, or refused the token (401/403)
INTERRUPTED = 130  # Ctrl-C


def exit_code_for(exc: CarrilError) -> int:
    if isinstance(exc, Unreachable | AuthRefused | Forbidden):
        return UNREACHABLE_OR_REFUSED
    return FAILED
