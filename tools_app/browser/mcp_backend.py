"""Web search through an MCP server's ``search`` and ``fetch`` tools (the shape of
OpenAI's deep-research MCP servers): ``search(query)`` answers JSON
``{"results": [{"id", "title", "url", "text"}]}`` and ``fetch(id)`` answers one
``{"id", "title", "text", "url"}``."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from tools_app.browser.backends import BackendError, Document, SearchHit
from tools_app.mcp.client import McpError, McpServerSpec, call_tool

SNIPPET_CHARS = 300


class McpSearchBackend:
    """A SearchBackend over one MCP server. Failures of the server (unreachable, refused,
    timed out, malformed answers) are BackendError with a model-readable message."""

    def __init__(self, server: McpServerSpec, timeout_s: float | None = None) -> None:
        self.server = server
        self.timeout_s = timeout_s if timeout_s is not None else float(settings.TOOL_CALL_TIMEOUT_S)
        # fetch takes an id; the model opens URLs: remember which id each URL of a result had.
        self._ids_by_url: dict[str, str] = {}

    def search(self, query: str, topn: int) -> list[SearchHit]:
        answer = self._call("search", {"query": query})
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise BackendError(f"The search server '{self.server.label}' gave an answer without results.")
        hits: list[SearchHit] = []
        for result in results[: max(topn, 0)]:
            if not isinstance(result, dict):
                continue
            ident = str(result.get("id") or result.get("url") or "")
            url = str(result.get("url") or ident)
            if not url:
                continue
            if ident:
                self._ids_by_url[url] = ident
            text = str(result.get("text") or "")
            hits.append(SearchHit(url=url, title=str(result.get("title") or url), snippet=text[:SNIPPET_CHARS]))
        return hits

    def open(self, url: str) -> Document | None:
        """The document with this URL (one a search returned) or this id; None when the
        server does not know it."""
        ident = self._ids_by_url.get(url, url)
        try:
            answer = call_tool(self.server, "fetch", {"id": ident}, self.timeout_s)
        except McpError as exc:
            # A tool error is the server saying "no such document"; anything else is a failure.
            if exc.tool_error:
                return None
            raise BackendError(exc.message)
        document = _json(answer, self.server.label)
        if not isinstance(document, dict) or not document.get("text"):
            return None
        return Document(url=str(document.get("url") or url), title=str(document.get("title") or url),
                        text=str(document["text"]))

    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        try:
            return _json(call_tool(self.server, tool, arguments, self.timeout_s), self.server.label)
        except McpError as exc:
            raise BackendError(exc.message)


def _json(text: str, label: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise BackendError(f"The search server '{label}' answered with something other than JSON.")
