"""Which URLs a webhook may call: http(s) only, and no loopback, private, link-local or
otherwise internal address unless an administrator allowed it (SSRF)."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit


class AddressRefused(ValueError):
    pass


def url_check(url: str, *, allow_private: bool) -> None:
    """Raise AddressRefused with the reason; checked at registration and before each call
    (a name may resolve elsewhere later)."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"}:
        raise AddressRefused("Only http and https URLs.")
    if not parts.hostname:
        raise AddressRefused("The URL has no host.")
    if parts.username or parts.password:
        raise AddressRefused("No credentials in the URL; verify calls by their signature.")
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise AddressRefused(f"The host does not resolve: {exc}") from exc
    if allow_private:
        return
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if not address.is_global or address.is_multicast:
            raise AddressRefused(
                f"{parts.hostname} resolves to {address}, a loopback, private or reserved "
                "address; an administrator must allow it."
            )
