"""The ``file_search`` tool in harmony. gpt-oss ships no file search of its own, so it is
offered as a namespace of one function, ``file_search.msearch({"queries": [...]})``, the shape
of OpenAI's own: the results come back numbered, and the model cites a result it uses with
the marker ``【N†filename】``, which becomes a ``file_citation`` annotation of the answer."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from openai_harmony import ToolDescription, ToolNamespaceConfig

NAMESPACE = "file_search"
FUNCTION = "msearch"
RECIPIENT = f"{NAMESPACE}.{FUNCTION}"
MAX_QUERIES = 5
DESCRIPTION = (
    "Search the files the user made available to you. Call msearch with one to five short, specific queries "
    "(different wordings of what you need). It answers with the most relevant passages, each headed by its "
    "marker, like 【0†handbook.pdf】. Answer from them, and cite each passage you use by writing its marker, "
    "exactly as given, right after the sentence it supports. If nothing relevant is found, say so.")
PARAMETERS = {"type": "object", "properties": {"queries": {
    "type": "array", "items": {"type": "string"}, "maxItems": MAX_QUERIES,
    "description": "The queries, each a few words."}}, "required": ["queries"]}
# The arguments' grammar on an engine that enforces one (vLLM): what read_queries takes,
# one to MAX_QUERIES queries that are not empty (xgrammar takes no pattern beside lengths).
ARGUMENTS_GRAMMAR = {"type": "grammar", "syntax": "json_schema", "definition": {
    "type": "object", "additionalProperties": False, "required": ["queries"], "properties": {"queries": {
        "type": "array", "minItems": 1, "maxItems": MAX_QUERIES,
        "items": {"type": "string", "minLength": 1, "maxLength": 128}}}}}
CITATION = re.compile(r"【(\d+)†([^】]*)】")


def namespace_config() -> ToolNamespaceConfig:
    return ToolNamespaceConfig(name=NAMESPACE, description=DESCRIPTION,
                               tools=[ToolDescription.new(FUNCTION, "Search the files.", PARAMETERS)])


def call_arguments(queries: list[str]) -> str:
    """The call's arguments, as the prompt shows a call made earlier."""
    return json.dumps({"queries": queries})


def read_queries(arguments: str) -> list[str]:
    """The queries of the model's call; ValueError says what is wrong with it."""
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError as error:
        raise ValueError(f"the arguments are not JSON ({error.msg})") from None
    queries = value.get("queries") if isinstance(value, dict) else None
    if isinstance(value, dict) and isinstance(value.get("query"), str):  # one query, as models often write it
        queries = [value["query"]]
    if not isinstance(queries, list) or not queries or not all(isinstance(query, str) for query in queries):
        raise ValueError('give {"queries": ["...", ...]}, a list of one to five strings')
    return [query for query in queries if query.strip()][:MAX_QUERIES] or queries[:1]


def results_text(results: list[dict[str, Any]] | None) -> str:
    """What the model reads back: each result under its marker."""
    if not results:
        return "No results."
    return "\n\n".join(f"【{n}†{result['filename']}】\n{result['text']}" for n, result in enumerate(results))


def file_citations(text: str, searches: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ``file_citation`` for each marker of ``text`` that names a result of these
    file_search_call items: result N of the latest search whose Nth result has that file
    name, else the latest result of that name."""
    searches = list(searches)[::-1]
    annotations = []
    for match in CITATION.finditer(text):
        number, filename = int(match.group(1)), match.group(2).strip()
        cited = next((results[number] for results in (search.get("results") or [] for search in searches)
                      if number < len(results) and results[number]["filename"] == filename), None)
        cited = cited or next((result for search in searches for result in search.get("results") or []
                               if result["filename"] == filename), None)
        if cited is not None:
            annotations.append({"type": "file_citation", "file_id": cited["file_id"], "filename": cited["filename"],
                                "index": match.start()})
    return annotations
