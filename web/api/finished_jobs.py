"""Finished jobs' status documents, rendered once and kept for a moment in this process.

A finished job does not change, yet pollers (scripts, the browser) keep reading it
several times a second. Keeping its rendered bytes skips the database, the JSON fields'
decoding and the serializer. Kept briefly anyway, so the rare later change (a job
deleted with its owner, an owner renamed) shows within seconds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

FINISHED_DOCUMENT_SECONDS = 5.0
_MAX_DOCUMENTS = 512


@dataclass(frozen=True)
class FinishedDocument:
    owner_id: int
    body: bytes
    expires_at: float  # time.monotonic()


class FinishedDocuments:
    def __init__(self) -> None:
        self._documents: dict[str, FinishedDocument] = {}
        self._lock = threading.Lock()

    def get(self, *, job_id: str) -> FinishedDocument | None:
        document = self._documents.get(job_id)
        if document is None or document.expires_at <= time.monotonic():
            return None
        return document

    def put(self, *, job_id: str, owner_id: int, body: bytes) -> None:
        with self._lock:
            if len(self._documents) >= _MAX_DOCUMENTS:
                self._documents.clear()  # many finished jobs polled at once: stay small
            self._documents[job_id] = FinishedDocument(
                owner_id=owner_id,
                body=body,
                expires_at=time.monotonic() + FINISHED_DOCUMENT_SECONDS,
            )

    def forget(self, *, job_id: str) -> None:
        """Drop one job's document: it was just changed (its name, tags or note)."""
        with self._lock:
            self._documents.pop(job_id, None)

    def clear(self) -> None:
        with self._lock:
            self._documents.clear()


finished_documents = FinishedDocuments()
