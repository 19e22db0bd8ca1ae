"""The outbound-URL guard: tools may only reach public addresses.

A request's tool definitions name URLs (an MCP ``server_url``), and a worker fetching
them sits inside the operator's network: without this guard a client could make it
talk to the database, the metadata service of the cloud it runs in, or anything else
on loopback or a private network (server-side request forgery).

The policy: http or https only, and every address the host resolves to must be
public, unless the operator lists the host (``host`` or ``host:port``) in
``settings.TOOLS_ALLOWED_PRIVATE_HOSTS``. ``check_url`` applies it to a URL before use;
``guarded_http_client`` builds an httpx2 client (the HTTP library of the MCP
transports) that applies it to every request it sends, each redirect hop included,
and connects only to the very addresses it checked, so a name that resolves to a
public address for the check and a private one for the connection (DNS rebinding)
gets nowhere.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
import httpcore2
import httpx2
from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

# Cloud metadata services hand out credentials: named apart so that the refusal says so.
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})

CARRIER_GRADE_NAT = ipaddress.ip_network("100.64.0.0/10")
# NAT64 embeds an IPv4 address in the low 32 bits; Python calls the prefix global.
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class UrlRefused(Exception):
    """A URL the policy does not let a tool reach. ``message`` names the host and why,
    never the URL's path or query (they may carry secrets)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def check_url(url: str) -> None:
    """Raise ``UrlRefused`` unless ``url`` is http(s) and its host may be reached.

    Resolves the host (blocking): call it from a thread, not from an event loop.
    """
    host, port = _host_and_port(url)
    checked_addresses(host, port)


def check_url_offline(url: str) -> None:
    """``check_url`` for what is decided without the network: the scheme, metadata and
    localhost names, and hosts that are addresses in any form the resolver reads as one
    (``127.1``, ``2130706433``, ``[::ffff:10.0.0.1]``). A host name is left to
    ``check_url`` when it is used (its addresses may change by then anyway)."""
    host, port = _host_and_port(url)
    if _is_allowed(host, port):
        return
    if host in METADATA_HOSTS:
        raise _refused(host, port, f"'{host}' is a cloud metadata service")
    if host == "localhost" or host.endswith(".localhost"):
        raise _refused(host, port, "it is a loopback name")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        return  # a name, not an address
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        reason = non_public_reason(address)
        if reason is not None and not _is_allowed(str(address), port):
            raise _refused(host, port, f"it is {reason}")


def checked_addresses(host: str, port: int) -> list[str]:
    """The addresses of ``host`` that a connection to ``host:port`` may use: all of them,
    in resolver order. Raises ``UrlRefused`` if any one of them is not allowed, because a
    client may pick any of them (and an attacker controls which, through the DNS)."""
    host = _normal_host(host)
    allowed_host = _is_allowed(host, port)
    if host in METADATA_HOSTS and not allowed_host:
        raise _refused(host, port, f"'{host}' is a cloud metadata service")
    addresses = _resolve(host, port)
    if not allowed_host:
        for address in addresses:
            reason = non_public_reason(address)
            if reason is not None and not _is_allowed(str(address), port):
                shown = "it is" if _is_literal(host) else f"it resolves to {address}, which is"
                raise _refused(host, port, f"{shown} {reason}")
    return [str(address) for address in addresses]


def non_public_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public address (as words for a message), or None if it is."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        reason = non_public_reason(embedded)
        return None if reason is None else f"{reason} (embedded in the IPv6 address {address})"
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.version == 4 and address in CARRIER_GRADE_NAT:
        return "a carrier-grade NAT address"
    if address.is_reserved:  # before is_private, which counts 240.0.0.0/4 too
        return "a reserved address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "not a globally routable address"
    return None


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if address.version == 4:
        return None
    assert isinstance(address, ipaddress.IPv6Address)
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _host_and_port(url: str) -> tuple[str, int]:
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"The URL is not valid: {exc}.")
    if scheme not in ALLOWED_SCHEMES:
        raise UrlRefused(f"The URL scheme '{scheme}' is not allowed: tools may only use http and https.")
    if not host:
        raise UrlRefused("The URL has no host.")
    return _normal_host(host), port if port is not None else DEFAULT_PORTS[scheme]


def _normal_host(host: str) -> str:
    # "LOCALHOST." and "localhost" are the same name to the resolver; brackets are URL syntax.
    return host.strip("[]").rstrip(".").lower()


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UrlRefused(f"The host '{host}' cannot be resolved ({exc}).")
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _canonname, sockaddr in infos:
        # Drop an IPv6 scope ("fe80::1%eth0"): the address itself decides the policy.
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise UrlRefused(f"The host '{host}' has no addresses.")
    return addresses


def _allowlist() -> Iterable[tuple[str, int | None]]:
    for entry in getattr(settings, "TOOLS_ALLOWED_PRIVATE_HOSTS", []):
        entry = entry.strip().lower()
        if entry.startswith("["):  # [v6] or [v6]:port
            host, _, rest = entry[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
        elif entry.count(":") == 1:  # host:port
            host, port_text = entry.split(":")
        else:  # a name, an IPv4 address or a bare IPv6 address
            host, port_text = entry, ""
        try:
            yield _normal_host(host), int(port_text) if port_text else None
        except ValueError:
            continue  # a malformed entry allows nothing


def _is_allowed(host: str, port: int) -> bool:
    host = _normal_host(host)
    return any(host == allowed and allowed_port in (None, port) for allowed, allowed_port in _allowlist())


def _refused(host: str, port: int, why: str) -> UrlRefused:
    shown = f"[{host}]" if ":" in host else host
    return UrlRefused(
        f"Refused to connect to {shown}:{port}: {why}. Tools may only reach public addresses; "
        f"an operator can allow this host with the setting TOOLS_ALLOWED_PRIVATE_HOSTS "
        f"(e.g. '{shown}:{port}')."
    )


class CheckingNetworkBackend(httpcore2.AsyncNetworkBackend):
    """Connects only to addresses that pass the policy, resolved here and used as they
    are: the address checked is the address connected to."""

    def __init__(self) -> None:
        self._backend = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        # abandon_on_cancel: a resolver that hangs must not outlive the caller's timeout.
        addresses = await anyio.to_thread.run_sync(checked_addresses, host, port, abandon_on_cancel=True)
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        raise UrlRefused("Tools may not connect to Unix sockets.")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


class GuardedTransport(httpx2.AsyncHTTPTransport):
    """An httpx2 transport that applies the policy to every request it sends (a client
    sends each redirect hop through its transport, so each hop is checked) and to every
    connection it opens."""

    def __init__(self, *, verify: bool = True) -> None:
        super().__init__(verify=verify)
        # httpx2 offers no hook for the network backend: rebuild its pool with ours.
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=httpx2.create_ssl_context(verify=verify),
            network_backend=CheckingNetworkBackend(),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        # Before any connection: the scheme, and a refusal naming the request's host.
        await anyio.to_thread.run_sync(check_url, str(request.url), abandon_on_cancel=True)
        return await super().handle_async_request(request)


def guarded_http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | float | None = None,
    auth: httpx2.Auth | None = None,
    *,
    follow_redirects: bool = False,
) -> httpx2.AsyncClient:
    """An httpx2 client whose every request obeys the policy; a request it refuses raises
    ``UrlRefused``. Its signature is the MCP transports' ``McpHttpClientFactory``.

    No proxies from the environment: a proxy would make the connection, not us, and the
    address check would be moot.
    """
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.Timeout(30.0),
        auth=auth,
        transport=GuardedTransport(),
        trust_env=False,
        follow_redirects=follow_redirects,
    )
