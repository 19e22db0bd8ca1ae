"""Fixtures for the tool tests: real MCP servers in subprocesses on 127.0.0.1."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from tests.tools.mcp_server import start_mcp_server

# What the authenticated test server demands, and what must never show up in an error.
SECRET_AUTHORIZATION = "Bearer s3cret-token-9f2c"


@dataclass(frozen=True)
class RunningMcpServer:
    url: str
    transport: str

    @property
    def host_port(self) -> str:
        """The allowlist entry (TOOLS_ALLOWED_PRIVATE_HOSTS) for exactly this server."""
        parts = urlsplit(self.url)
        return f"{parts.hostname}:{parts.port}"


def _stop(process: subprocess.Popen) -> None:
    process.kill()
    process.wait(timeout=10)


@pytest.fixture(scope="session", params=["streamable_http", "sse"])
def mcp_server(request: pytest.FixtureRequest) -> Iterator[RunningMcpServer]:
    """The test MCP server, once per transport."""
    url, process = start_mcp_server(request.param)
    try:
        yield RunningMcpServer(url, request.param)
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def streamable_server() -> Iterator[RunningMcpServer]:
    url, process = start_mcp_server("streamable_http")
    try:
        yield RunningMcpServer(url, "streamable_http")
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def authed_mcp_server() -> Iterator[RunningMcpServer]:
    """A test MCP server (streamable HTTP) that answers 401 without SECRET_AUTHORIZATION."""
    url, process = start_mcp_server("streamable_http", require_authorization=SECRET_AUTHORIZATION)
    try:
        yield RunningMcpServer(url, "streamable_http")
    finally:
        _stop(process)
