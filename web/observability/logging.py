"""Log records carry the request id (or "-" outside a request)."""

from __future__ import annotations

import logging

from observability.request_id import request_id_get


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_get() or "-"
        return True
