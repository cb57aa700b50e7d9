"""A model version's download as an HTTP response, the same for the API and the pages."""

from __future__ import annotations

from django.http import FileResponse
from registry.exports import Download, repr_digest


def download_response(download: Download) -> FileResponse:
    """The file as an attachment named for what it is, with its fingerprint
    (`X-Carril-Fingerprint`, and `Repr-Digest` when it is the sha256 of the bytes sent)."""
    handle = download.path.open("rb")
    if download.temporary:
        download.path.unlink()  # the open handle keeps the bytes until it is closed
    response = FileResponse(
        handle,
        as_attachment=True,
        filename=download.filename,
        content_type="application/octet-stream",
    )
    response["X-Carril-Fingerprint"] = download.fingerprint
    if download.digest_of_bytes:
        response["Repr-Digest"] = repr_digest(download.fingerprint)
    return response
