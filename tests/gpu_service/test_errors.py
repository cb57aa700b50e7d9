"""The GPU service's error catalogue is the one documented."""

from __future__ import annotations

from pathlib import Path

from gpu_service.errors import CATALOGUE, CarrilError, WorkerCrashed, error_from_dict

DOC = Path(__file__).resolve().parents[2] / "docs" / "api-errors.md"


def test_every_code_in_the_catalogue_is_documented_with_its_status():
    doc = DOC.read_text().split("## The GPU service's codes", 1)[1]
    for code, (status, _message) in CATALOGUE.items():
        assert f"| `{code}` | {status} |" in doc, code


def test_an_error_sent_across_a_process_keeps_its_class_code_and_details():
    sent = WorkerCrashed(details={"exitcode": -9}).as_dict()
    received = error_from_dict(sent)
    assert isinstance(received, WorkerCrashed)
    assert (received.code, received.details) == ("WORKER_CRASHED", {"exitcode": -9})
    assert isinstance(error_from_dict({"code": "NO_SUCH_CODE"}), CarrilError)


def test_a_conflict_built_from_a_state_reads_as_a_sentence():
    from gpu_service.errors import Conflict, state_conflict

    error = state_conflict(state="succeeded", consequence="it cannot be cancelled")
    assert isinstance(error, Conflict)
    assert error.message == "The job has already succeeded; it cannot be cancelled."
    assert error.details == {"state": "succeeded"}
