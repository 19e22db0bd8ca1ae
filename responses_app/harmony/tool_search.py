"""Tool search: tools marked ``defer_loading`` stay out of the model's prompt until a
search loads them.

A ``tool_search`` tool is offered to the model as a function of that name. Run by the
client (``execution: "client"``, as Codex sends it), the model's call becomes a
``tool_search_call`` item and the client answers with a ``tool_search_output`` item that
carries the tools it chose to load. Run by the server (``execution: "server"``, the
default), the worker searches the request's deferred tools by name and description
(``search``) and writes both items itself. Either way, the loaded tools are declared to
the model where the output stands, in a developer message of their own, so the prompt
before it (and the engine's prefix cache of it) does not change.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from responses_app.wire.request_body import is_number
from responses_app.wire.tool_types import CustomTool, FunctionTool, LoadedTool, NamespaceTool, Tool, ToolSearchTool

TOOL_NAME = "tool_search"
DEFAULT_DESCRIPTION = ("Searches the tools that are not loaded yet by what they do, and loads the best matches "
                       "for your next calls. Call it when none of your tools fits the task.")
DEFAULT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What the tool you need does."},
                   "limit": {"type": "integer", "description": "How many tools to load at most (default 8)."}},
    "required": ["query"],
}
DEFAULT_LIMIT = 8
MAX_LIMIT = 32
_WORD = re.compile(r"[a-z0-9]+")


def search_tool(tools: Iterable[Tool]) -> ToolSearchTool | None:
    return next((tool for tool in tools if isinstance(tool, ToolSearchTool)), None)


def deferred_tools(tools: Iterable[Tool]) -> list[LoadedTool]:
    """What a server-side search searches: each deferred function or custom tool, and each
    namespace with the members it defers (a namespace deferred whole defers them all)."""
    found: list[LoadedTool] = []
    for tool in tools:
        if isinstance(tool, NamespaceTool):
            members = tuple(member for member in tool.tools if tool.defer_loading or member.defer_loading)
            if members:
                found.append(replace(tool, tools=members))
        elif isinstance(tool, (FunctionTool, CustomTool)) and tool.defer_loading:
            found.append(tool)
    return found


def search(query: str, tools: list[LoadedTool], limit: int) -> list[LoadedTool]:
    """The deferred tools that match ``query`` best (BM25 over each tool's name and
    description; a namespace matches by its own text and its members'), best first."""
    documents = [_words(_text_of(tool)) for tool in tools]
    terms = set(_words(query))
    if not terms or not documents:
        return []
    average = sum(len(document) for document in documents) / len(documents) or 1.0
    frequency = Counter(term for document in documents for term in set(document))
    scores = []
    for index, document in enumerate(documents):
        counts = Counter(document)
        score = 0.0
        for term in terms & set(counts):
            idf = math.log(1 + (len(documents) - frequency[term] + 0.5) / (frequency[term] + 0.5))
            tf = counts[term]
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(document) / average))
        if score > 0:
            scores.append((score, index))
    scores.sort(key=lambda pair: (-pair[0], pair[1]))
    return [tools[index] for _, index in scores[:limit]]


def output_text(tools: Sequence[LoadedTool]) -> str:
    """What the model reads as the search's answer (the tools themselves follow, declared)."""
    if not tools:
        return "No tool matched the search."
    names = [f"{tool.name}.{member.name}" for tool in tools if isinstance(tool, NamespaceTool)
             for member in tool.tools]
    names += [f"functions.{tool.name}" for tool in tools if not isinstance(tool, NamespaceTool)]
    return "Loaded these tools; you can call them now: " + ", ".join(names) + "."


def limit_of(arguments: dict[str, Any]) -> int:
    limit = arguments.get("limit")
    if is_number(limit) and math.isfinite(limit) and limit >= 1:  # JSON allows Infinity
        return min(int(limit), MAX_LIMIT)
    return DEFAULT_LIMIT


def _text_of(tool: LoadedTool) -> str:
    parts = [tool.name, tool.description or ""]
    for member in tool.tools if isinstance(tool, NamespaceTool) else ():
        parts += [member.name, member.description or ""]
    # snake_case and camelCase names are words too.
    return re.sub(r"([a-z])([A-Z])", r"\1 \2", " ".join(parts)).replace("_", " ")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())
