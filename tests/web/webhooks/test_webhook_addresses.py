"""The webhook address check, against IPv6 forms that carry an internal IPv4 address and
against DNS rebinding: a call connects to the address that was checked, never to a
second lookup of the name. Receivers are real HTTP(S) servers on 127.0.0.1; the name
lookup is replaced at its seam (`socket.getaddrinfo`), and the connect is watched at
its own (`socket.create_connection`, what the HTTP client connects with)."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services import deliveries_send_due

from tests.support.webhook_receiver import Receiver

PUBLIC = "93.184.215.14"  # a global address; nothing here ever connects to it


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254 (cloud metadata)
        "64:ff9b:1::a00:1",  # local-use NAT64 (RFC 8215)
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "::127.0.0.1",  # IPv4-compatible
        "::10.0.0.1",
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:192.168.0.1",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
    ],
)
def test_an_ipv6_address_that_embeds_an_internal_ipv4_address_is_refused(owner_api, address):
    response = owner_api.post(
        "/api/v1/webhooks/",
        {"url": f"http://[{address}]:8080/hook", "events": ["job.finished"]},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert (
        "an administrator must allow it" in response.json()["error"]["details"]["fields"]["url"][0]
    )


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1", "2606:4700::1111"])
def test_an_ipv6_address_that_embeds_a_public_ipv4_address_is_allowed(owner_api, address):
    response = owner_api.post(
        "/api/v1/webhooks/",
        {"url": f"http://[{address}]/hook", "events": ["job.finished"]},
        format="json",
    )
    assert response.status_code == 201, response.content


class Resolver:
    """`socket.getaddrinfo` for the names given, each answering from its list of
    addresses in turn (the last one from then on); other hosts resolve as usual."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, **answers: list[str]) -> None:
        self.answers = {name.replace("_", "."): list(each) for name, each in answers.items()}
        self.asked: list[str] = []
        real = socket.getaddrinfo

        def getaddrinfo(host, port, *args, **kwargs):
            host = host.decode() if isinstance(host, bytes) else host
            if host not in self.answers:
                return real(host, port, *args, **kwargs)
            self.asked.append(host)
            queue = self.answers[host]
            address = queue.pop(0) if len(queue) > 1 else queue[0]
            return real(address, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def a_delivery_to(url: str, *, owner, allow_private: bool = False) -> WebhookDelivery:
    hook = Webhook.objects.create(
        owner=owner, url=url, events=["job.finished"], secret="s", allow_private=allow_private
    )
    return WebhookDelivery.objects.create(
        webhook=hook,
        event="job.finished",
        event_key="job:1",
        payload={"event": "job.finished", "data": {}},
        next_attempt_at=hook.created_at,
    )


def test_a_name_that_rebinds_to_loopback_after_the_check_is_never_called_there(
    owner, receiver, monkeypatch
):
    """Public when checked, 127.0.0.1 when connected: the call goes to the public address
    it was checked at (refused here, as the open internet would be unreachable) and
    nothing arrives at the receiver on 127.0.0.1."""
    port = receiver.server.server_address[1]
    resolver = Resolver(monkeypatch, rebind_example=[PUBLIC, "127.0.0.1"])
    connected: list[tuple[str, int]] = []
    real_connect = socket.create_connection

    def create_connection(address, *args, **kwargs):
        connected.append(address)
        if address[0] == PUBLIC:
            raise ConnectionRefusedError(111, "no internet in tests")
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    delivery = a_delivery_to(f"http://rebind.example:{port}/hook", owner=owner)

    deliveries_send_due()

    assert receiver.calls == [], "the rebound name reached 127.0.0.1"
    assert connected == [(PUBLIC, port)], "connected to the checked address only"
    assert resolver.asked == ["rebind.example"], "the name is looked up once per call"
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts) == ("pending", 1)
    assert "ConnectError" in delivery.last_error


def test_a_pinned_call_still_names_the_registered_host_to_the_receiver(
    admin, receiver, monkeypatch
):
    port = receiver.server.server_address[1]
    Resolver(monkeypatch, receiver_example=["127.0.0.1"])
    delivery = a_delivery_to(
        f"http://receiver.example:{port}/hook", owner=admin, allow_private=True
    )
    deliveries_send_due()
    delivery.refresh_from_db()
    assert (delivery.state, delivery.last_status_code) == ("delivered", 200)
    assert receiver.calls[0][0]["Host"] == f"receiver.example:{port}"


@pytest.fixture
def tls_receiver(tmp_path: Path):
    """An HTTPS server on 127.0.0.1 whose certificate names receiver.example only."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=receiver.example"),
            *("-addext", "subjectAltName=DNS:receiver.example"),
        ],
        check=True,
        capture_output=True,
    )
    calls: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            calls.append(self.headers["Host"])
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], cert, calls
    server.shutdown()
    server.server_close()


def test_a_pinned_https_call_checks_the_certificate_against_the_registered_name(
    admin, tls_receiver, monkeypatch
):
    port, cert, calls = tls_receiver
    Resolver(monkeypatch, receiver_example=["127.0.0.1"])
    delivery = a_delivery_to(
        f"https://receiver.example:{port}/hook", owner=admin, allow_private=True
    )
    trusting = ssl.create_default_context(cafile=str(cert))
    with httpx.Client(verify=trusting, timeout=3.0) as client:
        deliveries_send_due(client=client)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.last_error) == ("delivered", "")
    assert calls == [f"receiver.example:{port}"]
