"""A real MCP server for tests: run it as a subprocess, talk to it over the network.

``python -m tests.tools.mcp_server --transport streamable_http|sse --port N
[--require-authorization "Bearer …"]`` serves the tools below on 127.0.0.1.
``start_mcp_server`` starts one on a free port and returns its endpoint URL once it
answers; the caller kills the process.
"""

from __future__ import annotations

import argparse
import asyncio
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
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--require-authorization", default=None)
    args = parser.parse_args()
    server = build_server()
    app = server.streamable_http_app() if args.transport == "streamable_http" else server.sse_app()
    if args.require_authorization:
        app = _require_authorization(app, args.require_authorization)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"The test MCP server exited with status {process.returncode}.")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"The test MCP server did not listen on port {port} within {timeout_s}s.")


def start_mcp_server(transport: str, *, require_authorization: str | None = None) -> tuple[str, subprocess.Popen]:
    """Start the server on 127.0.0.1 on a free port; return the URL of its MCP endpoint
    (``…/mcp`` or ``…/sse``) once it accepts connections, and its process (kill it)."""
    port = free_port()
    command = [sys.executable, "-m", "tests.tools.mcp_server", "--transport", transport, "--port", str(port)]
    if require_authorization:
        command += ["--require-authorization", require_authorization]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        wait_for_port(port, process)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return f"http://127.0.0.1:{port}{ENDPOINT_PATHS[transport]}", process


if __name__ == "__main__":
    main()
