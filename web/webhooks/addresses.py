"""Which URLs a webhook may call: http(s) only, and no loopback, private, link-local or
otherwise internal address unless an administrator allowed it (SSRF).

An IPv6 address can carry an IPv4 one inside it (IPv4-mapped and -compatible, NAT64,
6to4, Teredo) that the network may route to; the IPv4 address inside must pass too.
A call goes to the address that was checked, never to a second lookup of the name
(`url_pin`): a name that resolves to a public address at the check and to an internal
one a moment later (DNS rebinding) reaches only the public one.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: the last 32 bits are IPv4
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: local use only
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated ::a.b.c.d (RFC 4291)


class AddressRefused(ValueError):
    pass


@dataclass(frozen=True)
class PinnedURL:
    """A webhook URL with its host replaced by the address that was checked; `headers`
    and `extensions` keep the name for the receiver (Host) and for TLS (SNI and the
    certificate's name)."""

    url: httpx.URL
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, str] = field(default_factory=dict)


def embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, in the forms a network may route."""
    if address.version == 4:
        return []
    found = []
    if address.ipv4_mapped:
        found.append(address.ipv4_mapped)
    if address.sixtofour:
        found.append(address.sixtofour)
    if address.teredo:
        found.extend(address.teredo)  # the relay and the client behind it
    if address in NAT64 or (address in IPV4_COMPATIBLE and int(address) > 1):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def address_is_public(address: IPAddress) -> bool:
    if address.version == 6 and address in NAT64_LOCAL:
        return False
    return all(
        each.is_global and not each.is_multicast for each in [address, *embedded_ipv4(address)]
    )


def url_check(url: str, *, allow_private: bool) -> list[IPAddress]:
    """The addresses the URL's host resolves to now, or AddressRefused with the reason;
    checked at registration and before each call (a name may resolve elsewhere later)."""
    try:
        httpx.URL(url)  # what the call will be made with must be able to read it
        parts = urlsplit(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise AddressRefused(f"Not a usable URL: {exc}") from exc
    if parts.scheme not in {"http", "https"}:
        raise AddressRefused("Only http and https URLs.")
    if not parts.hostname:
        raise AddressRefused("The URL has no host.")
    if parts.username or parts.password:
        raise AddressRefused("No credentials in the URL; verify calls by their signature.")
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        raise AddressRefused(f"The host does not resolve: {exc}") from exc
    addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]
    if not addresses:
        raise AddressRefused(f"{parts.hostname} resolves to no address.")
    if allow_private:
        return addresses
    for address in addresses:
        if not address_is_public(address):
            raise AddressRefused(
                f"{parts.hostname} resolves to {address}, a loopback, private or reserved "
                "address (or one that embeds such an IPv4 address); an administrator must "
                "allow it."
            )
    return addresses


def url_pin(url: str, *, allow_private: bool) -> PinnedURL:
    """Check the URL and point it at the first address checked, so the call connects
    there whatever the name resolves to by the time it connects."""
    address = url_check(url, allow_private=allow_private)[0]
    target = httpx.URL(url)
    pinned = target.copy_with(host=str(address))
    headers = {"Host": target.netloc.decode("ascii")}
    extensions = {}
    if target.scheme == "https" and not _is_address(target.host):
        # The certificate must name the host the user registered, not the address.
        extensions["sni_hostname"] = target.raw_host.decode("ascii")
    return PinnedURL(url=pinned, headers=headers, extensions=extensions)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
