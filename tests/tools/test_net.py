"""The outbound-URL guard: tools reach public addresses only, unless the operator allows
a host; every request of a guarded client is checked, each redirect hop included."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anyio
import httpcore2
import pytest
from django.test import override_settings

from tools_app.url_guard import CheckingNetworkBackend, UrlRefused, check_url, guarded_http_client


class _Site:
    """A real HTTP server on 127.0.0.1 that answers every GET with 200 "target", or with a
    302 to ``redirect_to`` when set, and counts the requests it got."""

    def __init__(self, redirect_to: str | None = None) -> None:
        site = self
        self.hits = 0

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                site.hits += 1
                if redirect_to:
                    self.send_response(302)
                    self.send_header("Location", redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    body = b"target"
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def target() -> Iterator[_Site]:
    site = _Site()
    yield site
    site.close()


@pytest.fixture
def redirector(target: _Site) -> Iterator[_Site]:
    site = _Site(redirect_to=target.url)
    yield site
    site.close()


def _get(url: str) -> tuple[int, str]:
    async def fetch() -> tuple[int, str]:
        async with guarded_http_client(follow_redirects=True) as client:
            response = await client.get(url)
            return response.status_code, response.text

    return anyio.run(fetch)


# --- check_url -----------------------------------------------------------------------------


@pytest.mark.parametrize("url, reason", [
    ("http://127.0.0.1:8000/mcp", "loopback"),
    ("http://10.0.0.1/", "private"),
    ("http://192.168.1.20/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("http://169.254.1.1/", "link-local"),
    ("http://[::1]:8000/", "loopback"),
    ("http://[fd00:ec2::254]/", "cloud metadata"),
    ("http://[fc00::1]/", "private"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:10.1.2.3]/", "private"),
    ("http://[64:ff9b::a00:1]/", "private"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://240.0.0.1/", "reserved"),
    ("http://localhost:8000/", "loopback"),
    ("http://metadata.google.internal/computeMetadata/v1/", "cloud metadata"),
])
def test_it_refuses_non_public_addresses_and_says_why(url: str, reason: str) -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]), pytest.raises(UrlRefused) as refused:
        check_url(url)
    assert reason in refused.value.message
    assert "TOOLS_ALLOWED_PRIVATE_HOSTS" in refused.value.message


def test_it_names_the_resolved_address_of_a_name() -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]), pytest.raises(UrlRefused) as refused:
        check_url("http://localhost:9/")
    assert "localhost:9" in refused.value.message
    assert "resolves to" in refused.value.message


def test_it_never_shows_the_path_or_query_of_a_refused_url() -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]), pytest.raises(UrlRefused) as refused:
        check_url("http://10.0.0.1/hook?token=hunter2")
    assert "hunter2" not in refused.value.message


@pytest.mark.parametrize("url", ["ftp://example.com/", "file:///etc/passwd", "gopher://127.0.0.1:70/", "example.com"])
def test_it_refuses_schemes_other_than_http_and_https(url: str) -> None:
    with pytest.raises(UrlRefused, match="http and https"):
        check_url(url)


def test_it_allows_public_addresses() -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]):
        check_url("https://8.8.8.8/dns-query")
        check_url("http://[2606:4700:4700::1111]/")


@pytest.mark.parametrize("allowed", [["127.0.0.1:8000"], ["127.0.0.1"], [" 127.0.0.1:8000 ", "10.0.0.1"]])
def test_an_operator_can_allow_a_private_host(allowed: list[str]) -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=allowed):
        check_url("http://127.0.0.1:8000/mcp")


def test_an_allowed_host_port_allows_no_other_port() -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=["127.0.0.1:8000"]), pytest.raises(UrlRefused):
        check_url("http://127.0.0.1:8001/mcp")


def test_an_operator_can_allow_an_ipv6_host() -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=["[::1]:8000"]):
        check_url("http://[::1]:8000/")
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=["[::1]:8000"]), pytest.raises(UrlRefused):
        check_url("http://[::1]:8001/")


def test_allowing_an_address_does_not_allow_a_name_for_a_different_port() -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=["127.0.0.1:8000"]), pytest.raises(UrlRefused):
        check_url("http://localhost:8001/")


# --- the guarded client ----------------------------------------------------------------------


def test_the_guarded_client_refuses_a_loopback_url_before_connecting(target: _Site) -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]), pytest.raises(UrlRefused):
        _get(target.url)
    assert target.hits == 0


def test_the_guarded_client_reaches_an_allowed_host(target: _Site) -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[f"127.0.0.1:{target.port}"]):
        assert _get(target.url) == (200, "target")
    assert target.hits == 1


def test_a_redirect_from_an_allowed_host_to_a_refused_one_is_not_followed(redirector: _Site, target: _Site) -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[f"127.0.0.1:{redirector.port}"]):
        with pytest.raises(UrlRefused) as refused:
            _get(redirector.url)
    assert f"127.0.0.1:{target.port}" in refused.value.message
    assert redirector.hits == 1
    assert target.hits == 0


def test_a_redirect_between_allowed_hosts_is_followed(redirector: _Site, target: _Site) -> None:
    allowed = [f"127.0.0.1:{redirector.port}", f"127.0.0.1:{target.port}"]
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=allowed):
        assert _get(redirector.url) == (200, "target")
    assert (redirector.hits, target.hits) == (1, 1)


# --- the connection: the address checked is the address connected to -------------------------


def _connect(host: str, port: int) -> None:
    async def connect() -> None:
        stream = await CheckingNetworkBackend().connect_tcp(host, port, timeout=5)
        await stream.aclose()

    anyio.run(connect)


def test_the_network_backend_refuses_a_connection_to_a_private_address(target: _Site) -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]), pytest.raises(UrlRefused):
        _connect("localhost", target.port)


def test_the_network_backend_connects_to_an_allowed_host(target: _Site) -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[f"127.0.0.1:{target.port}"]):
        _connect("127.0.0.1", target.port)


def test_the_network_backend_refuses_unix_sockets() -> None:
    async def connect() -> httpcore2.AsyncNetworkStream:
        return await CheckingNetworkBackend().connect_unix_socket("/var/run/docker.sock")

    with pytest.raises(UrlRefused):
        anyio.run(connect)
