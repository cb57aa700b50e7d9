"""Uploads stream to a temporary file on disk and stop once they pass the size cap."""

from __future__ import annotations

from carril_web.errors import PayloadTooLarge
from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler


class CappedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Django's on-disk handler with a byte cap (CARRIL_UPLOAD_MAX_BYTES).

    The only handler installed, so no upload is ever held in memory whatever its size.
    """

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self._received = 0
        if content_length and content_length > settings.CARRIL_UPLOAD_MAX_BYTES:
            raise PayloadTooLarge(details={"max_bytes": settings.CARRIL_UPLOAD_MAX_BYTES})
        return super().handle_raw_input(input_data, META, content_length, boundary, encoding)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self._received = getattr(self, "_received", 0) + len(raw_data)
        if self._received > settings.CARRIL_UPLOAD_MAX_BYTES:
            self.file.close()
            raise PayloadTooLarge(details={"max_bytes": settings.CARRIL_UPLOAD_MAX_BYTES})
        return super().receive_data_chunk(raw_data, start)
