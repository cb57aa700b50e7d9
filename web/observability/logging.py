"""Log records carry the request id (or "-" outside a request)."""

from __future__ import annotations

import logging

from observability.request_id import request_id_get


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # django.request logs a response after the middleware has returned, with the
        # request attached to the record: take the id from there.
        request = getattr(record, "request", None)
        record.request_id = request_id_get() or getattr(request, "request_id", None) or "-"
        return True
