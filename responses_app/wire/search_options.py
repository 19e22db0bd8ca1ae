"""The options of a search, which a vector store search (``vector_stores.search``) and a
response's ``file_search`` tool share: attribute filters, the number of results, ranking;
and the file_search tool itself, parsed once at create (``FileSearchTool``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.request_body import body_fields, is_integer, is_number

COMPARISONS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin")
COMPOUNDS = ("and", "or")
MAX_FILTER_DEPTH = 8
MAX_RESULTS = 50
TOOL_RESULTS = 10  # a file_search tool's results when it sets no max_num_results
# OpenAI's file_search tool searches up to two stores; a few more cost nothing here.
MAX_FILE_SEARCH_STORES = 10
RANKERS = ("none", "auto", "default-2024-11-15")


@dataclass(frozen=True)
class Comparison:
    key: str
    type: str  # one of COMPARISONS
    value: str | float | bool | tuple[str | float, ...]


@dataclass(frozen=True)
class Compound:
    type: str  # "and" or "or"
    filters: tuple[Comparison | Compound, ...]


Filter = Comparison | Compound


def parse_filter(value: Any, param: str = "filters", depth: int = 0) -> Filter:
    """A comparison of one attribute with a value, or ``and`` / ``or`` of filters. A value of
    the wrong type for its comparison is a 400 (an order on a boolean, a list for ``eq``)."""
    if not isinstance(value, dict):
        raise invalid_type(param, "an object", value)
    if depth > MAX_FILTER_DEPTH:
        raise InvalidRequest(f"Filters nest at most {MAX_FILTER_DEPTH} deep.", param=param)
    kind = value.get("type")
    if kind in COMPOUNDS:
        fields = body_fields(value, ("type", "filters"), required=("filters",))
        if not isinstance(fields["filters"], list) or not fields["filters"]:
            raise invalid_type(f"{param}.filters", "a non-empty array of filters", fields["filters"])
        return Compound(kind, tuple(parse_filter(item, f"{param}.filters[{n}]", depth + 1)
                                    for n, item in enumerate(fields["filters"])))
    if kind not in COMPARISONS:
        raise InvalidRequest(f"Invalid value for '{param}.type': {kind!r}. Supported values are: "
                             f"{', '.join(COMPARISONS + COMPOUNDS)}.", param=f"{param}.type", code="invalid_value")
    fields = body_fields(value, ("type", "key", "value"), required=("key", "value"))
    if not isinstance(fields["key"], str):
        raise invalid_type(f"{param}.key", "a string", fields["key"])
    operand = fields["value"]
    if kind in ("in", "nin"):
        if not isinstance(operand, list) or not all(
                isinstance(item, str) or is_number(item) for item in operand):
            raise invalid_type(f"{param}.value", "an array of strings and numbers", operand)
        return Comparison(fields["key"], kind, tuple(operand))
    allowed = (str, int, float) if kind in ("gt", "gte", "lt", "lte") else (str, int, float, bool)
    if not isinstance(operand, allowed) or (kind not in ("eq", "ne") and isinstance(operand, bool)):
        expected = "a string or a number" if kind not in ("eq", "ne") else "a string, a number or a boolean"
        raise invalid_type(f"{param}.value", expected, operand)
    return Comparison(fields["key"], kind, operand)


def parse_max_num_results(value: Any, param: str) -> int:
    if not is_integer(value):
        raise invalid_type(param, "an integer", value)
    if not 1 <= value <= MAX_RESULTS:
        raise InvalidRequest(f"'{param}' must be from 1 to {MAX_RESULTS}, got {value}.", param=param,
                             code="invalid_value")
    return value


@dataclass(frozen=True)
class Ranking:
    """``ranking_options``: the least score of a result, and the weights of the two rankings
    that hybrid search fuses (``hybrid_search``; equal unless told)."""

    score_threshold: float = 0.0
    embedding_weight: float = 1.0
    text_weight: float = 1.0


def parse_ranking_options(value: Any, param: str) -> Ranking:
    """``ranker`` is checked and otherwise a hint: every ranker here is the one ranking
    (docs/file-search.md)."""
    if value is None:
        return Ranking()
    if not isinstance(value, dict):
        raise invalid_type(param, "an object", value)
    fields = body_fields(value, ("ranker", "score_threshold", "hybrid_search"))
    if fields.get("ranker") is not None and fields["ranker"] not in RANKERS:
        raise InvalidRequest(f"Invalid value for '{param}.ranker': {fields['ranker']!r}. Supported values are: "
                             f"{', '.join(RANKERS)}.", param=f"{param}.ranker", code="invalid_value")
    threshold = fields.get("score_threshold", 0.0)
    if not is_number(threshold) or not 0 <= threshold <= 1:
        raise InvalidRequest(f"'{param}.score_threshold' is a number from 0 to 1.",
                             param=f"{param}.score_threshold", code="invalid_value")
    if "hybrid_search" not in fields:
        return Ranking(float(threshold))
    hybrid_param = f"{param}.hybrid_search"
    if not isinstance(fields["hybrid_search"], dict):
        raise invalid_type(hybrid_param, "an object", fields["hybrid_search"])
    hybrid = body_fields(fields["hybrid_search"], ("embedding_weight", "text_weight"),
                         required=("embedding_weight", "text_weight"))
    for name, weight in hybrid.items():
        if not is_number(weight) or weight < 0:
            raise InvalidRequest(f"'{hybrid_param}.{name}' is a number of at least 0.",
                                 param=f"{hybrid_param}.{name}", code="invalid_value")
    if not hybrid["embedding_weight"] and not hybrid["text_weight"]:
        raise InvalidRequest(f"'{hybrid_param}' needs a weight above 0.", param=hybrid_param, code="invalid_value")
    return Ranking(float(threshold), float(hybrid["embedding_weight"]), float(hybrid["text_weight"]))


@dataclass(frozen=True)
class FileSearchTool:
    """A response's ``file_search`` tool: the stores it searches and its search options.

    Validation parses the tool as sent (``parse``); the row stores ``to_stored()``, the tool
    as the response echoes it (its filters and ranking options as sent); the worker reads the
    row back with ``from_stored``, once per response, into the same type.
    """

    vector_store_ids: tuple[str, ...]
    filter: Filter | None = None
    max_num_results: int = TOOL_RESULTS
    ranking: Ranking = Ranking()
    sent: dict[str, Any] | None = None  # filters, max_num_results and ranking_options as sent
    type: str = field(default="file_search", init=False)

    @classmethod
    def parse(cls, tool: dict[str, Any], param: str) -> FileSearchTool:
        for key in tool:
            if key not in ("type", "vector_store_ids", "filters", "max_num_results", "ranking_options"):
                raise InvalidRequest(f"Unknown parameter: '{param}.{key}'.", param=f"{param}.{key}",
                                     code="unknown_parameter")
        ids = tool.get("vector_store_ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(store_id, str) for store_id in ids):
            raise invalid_type(f"{param}.vector_store_ids", "a non-empty array of strings", ids)
        if len(ids) > MAX_FILE_SEARCH_STORES:
            raise InvalidRequest(f"A file_search tool searches at most {MAX_FILE_SEARCH_STORES} vector stores.",
                                 param=f"{param}.vector_store_ids", code="array_above_max_length")
        sent = {key: tool[key] for key in ("filters", "max_num_results", "ranking_options")
                if tool.get(key) is not None}
        return cls(
            vector_store_ids=tuple(dict.fromkeys(ids)),
            filter=parse_filter(sent["filters"], f"{param}.filters") if "filters" in sent else None,
            max_num_results=(parse_max_num_results(sent["max_num_results"], f"{param}.max_num_results")
                             if "max_num_results" in sent else TOOL_RESULTS),
            ranking=parse_ranking_options(sent.get("ranking_options"), f"{param}.ranking_options"),
            sent=sent,
        )

    @classmethod
    def from_stored(cls, stored: dict[str, Any]) -> FileSearchTool:
        """A stored tool passed ``parse`` at its create: it parses again without error."""
        return cls.parse(stored, "tools")

    def to_stored(self) -> dict[str, Any]:
        return {"type": "file_search", "vector_store_ids": list(self.vector_store_ids), **(self.sent or {})}
