"""Jobs' rendered status documents, kept for a moment in this process (ADR 0050).

Pollers (scripts, CI jobs, the job page in several tabs) read the same job many times
a second. A kept document is served without the database, the JSON fields' decoding
and the document's building; who may read it is still decided on every request (its
owner, or staff), and authentication and token scopes run before the view as always.

- A finished job does not change: its document is kept FINISHED_DOCUMENT_SECONDS, so the
  rare later change (a job deleted with its owner, an owner renamed) shows within
  seconds; a change made through this process (name, tags, note) drops it at once.
- An unfinished job changes as the reconciler mirrors the GPU service, at most every
  ACTIVE_INTERVAL_S (0.1 s) while jobs run: its document is kept
  UNFINISHED_DOCUMENT_SECONDS, no longer than that, so a reader is at most one more
  reconciler pass behind. It only saves work when the same job is asked for again within
  that time (several pollers of one job); a single poller reads the row each time. A
  cancel or a label change made through this process drops it at once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

FINISHED_DOCUMENT_SECONDS = 5.0
UNFINISHED_DOCUMENT_SECONDS = 0.1
_MAX_DOCUMENTS = 512


@dataclass(frozen=True)
class KeptDocument:
    owner_id: int
    body: bytes
    finished: bool
    expires_at: float  # time.monotonic()


class JobDocuments:
    def __init__(self) -> None:
        self._documents: dict[str, KeptDocument] = {}
        self._lock = threading.Lock()

    def get(self, *, job_id: str) -> KeptDocument | None:
        document = self._documents.get(job_id)
        if document is None or document.expires_at <= time.monotonic():
            return None
        return document

    def put(self, *, job_id: str, owner_id: int, body: bytes, finished: bool) -> None:
        seconds = FINISHED_DOCUMENT_SECONDS if finished else UNFINISHED_DOCUMENT_SECONDS
        with self._lock:
            if len(self._documents) >= _MAX_DOCUMENTS:
                self._documents.clear()  # many jobs polled at once: stay small
            self._documents[job_id] = KeptDocument(
                owner_id=owner_id,
                body=body,
                finished=finished,
                expires_at=time.monotonic() + seconds,
            )

    def forget(self, *, job_id: str) -> None:
        """Drop one job's document: it was just changed through this process."""
        with self._lock:
            self._documents.pop(job_id, None)

    def clear(self) -> None:
        with self._lock:
            self._documents.clear()


job_documents = JobDocuments()
