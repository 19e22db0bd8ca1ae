"""A real MCP server for tests: run it as a subprocess, talk to it over the network.

``python -m tests.tools.mcp_server --transport streamable_http|sse --fd N
[--require-authorization "Bearer …"]`` serves the tools below on the listening socket N.
``start_mcp_server`` binds that socket on a free port of 127.0.0.1, hands it to the child
and returns the endpoint URL once the server answers; the caller kills the process.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ENDPOINT_PATHS = {"streamable_http": "/mcp", "sse": "/sse"}

# The corpus of the `search` and `fetch` tools: a tiny web.
DOCUMENTS = [
    {
        "id": "doc-harmony",
        "title": "The harmony response format",
        "url": "https://example.com/harmony",
        "text": "gpt-oss models speak the harmony format: channels analysis, commentary and final.",
    },
    {
        "id": "doc-mcp",
        "title": "Model Context Protocol",
        "url": "https://example.com/mcp",
        "text": "MCP servers expose tools over streamable HTTP or SSE to language model clients.",
    },
    {
        "id": "doc-celery",
        "title": "Celery workers",
        "url": "https://example.com/celery",
        "text": "Celery runs tasks in worker processes; a threads pool shares one process.",
    },
]


def build_server() -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer("test-tools")

    @server.tool(description="Add two integers.", annotations=ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Return the text unchanged.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Always fails with the given message.")
    def fail(message: str) -> str:
        raise ToolError(message)

    @server.tool(description="Sleep for the given number of seconds.")
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(description="Search the documents; returns JSON {results: [{id, title, url, text}]}.")
    def search(query: str) -> str:
        words = [word for word in query.lower().split() if word]
        hits = [doc for doc in DOCUMENTS if any(word in (doc["title"] + " " + doc["text"]).lower() for word in words)]
        return json.dumps({"results": hits})

    @server.tool(description="Fetch one document by id; returns JSON {id, title, text, url}.")
    def fetch(id: str) -> str:
        for doc in DOCUMENTS:
            if doc["id"] == id or doc["url"] == id:
                return json.dumps(doc)
        raise ValueError(f"No document with id {id!r}.")

    return server


def _require_authorization(app: Any, expected: str) -> Any:
    """Answer 401 to any request without exactly this Authorization header: proves that a
    client sends the headers it was configured with."""

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization", b"").decode() != expected:
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"missing or wrong Authorization"})
                return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=sorted(ENDPOINT_PATHS), required=True)
    parser.add_argument("--fd", type=int, required=True, help="a listening TCP socket inherited from the parent")
    parser.add_argument("--require-authorization", default=None)
    args = parser.parse_args()
    server = build_server()
    app = server.streamable_http_app() if args.transport == "streamable_http" else server.sse_app()
    if args.require_authorization:
        app = _require_authorization(app, args.require_authorization)
    listener = socket.socket(fileno=args.fd)  # family and type read from the descriptor
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


def wait_until_serving(port: int, process: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """The socket accepts connections into its backlog from the start: wait for an HTTP answer."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"The test MCP server exited with status {process.returncode}.")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
        try:
            connection.request("GET", "/")
            connection.getresponse().read()
            return
        except OSError:
            time.sleep(0.1)
        finally:
            connection.close()
    raise RuntimeError(f"The test MCP server did not answer on port {port} within {timeout_s}s.")


def start_mcp_server(transport: str, *, require_authorization: str | None = None) -> tuple[str, subprocess.Popen]:
    """Start the server on a free port of 127.0.0.1; return the URL of its MCP endpoint
    (``…/mcp`` or ``…/sse``) once it answers, and its process (kill it).

    The port is bound here and the socket inherited: a port that was only free when asked
    for can be taken by another test's server before the child binds it (CI on bb1aa27)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        port = listener.getsockname()[1]
        command = [sys.executable, "-m", "tests.tools.mcp_server", "--transport", transport,
                   "--fd", str(listener.fileno())]
        if require_authorization:
            command += ["--require-authorization", require_authorization]
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        process = subprocess.Popen(command, cwd=ROOT, env=env, pass_fds=(listener.fileno(),))
    try:
        wait_until_serving(port, process)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return f"http://127.0.0.1:{port}{ENDPOINT_PATHS[transport]}", process


if __name__ == "__main__":
    main()
