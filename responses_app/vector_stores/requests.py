"""The bodies of the Vector Stores API (client.vector_stores, .files, .file_batches) and of
a search: typed requests out, OpenAI's 400 for anything else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.metadata import MAX_METADATA_KEY, MAX_METADATA_PAIRS, MAX_METADATA_VALUE, parse_metadata
from responses_app.wire.request_body import body_fields, is_integer
from responses_app.wire.search_options import (
    Filter,
    Ranking,
    parse_filter,
    parse_max_num_results,
    parse_ranking_options,
)

MAX_NAME = 256
MAX_DESCRIPTION = 512
MAX_FILES_PER_CALL = 2000  # OpenAI's most in one file batch
MAX_EXPIRY_DAYS = 365
MAX_QUERIES = 10
MAX_QUERY_CHARS = 4096

Attributes = dict[str, str | float | bool]

AUTO_MAX_TOKENS = 800
AUTO_OVERLAP_TOKENS = 400
MIN_MAX_TOKENS = 100
MAX_MAX_TOKENS = 4096


@dataclass(frozen=True)
class ChunkingStrategy:
    type: str  # "auto" or "static"
    max_chunk_size_tokens: int
    chunk_overlap_tokens: int

    def wire(self) -> dict[str, Any]:
        """As a vector store file carries it (the SDK's StaticFileChunkingStrategyObject)."""
        return {"type": "static", "static": {"max_chunk_size_tokens": self.max_chunk_size_tokens,
                                             "chunk_overlap_tokens": self.chunk_overlap_tokens}}


# OpenAI's ``auto``.
AUTO = ChunkingStrategy("auto", AUTO_MAX_TOKENS, AUTO_OVERLAP_TOKENS)


def parse_chunking_strategy(value: Any, param: str = "chunking_strategy") -> ChunkingStrategy:
    """``chunking_strategy`` of a store or a file: absent or ``{"type": "auto"}``, or static sizes."""
    if value is None:
        return AUTO
    if not isinstance(value, dict):
        raise invalid_type(param, "an object", value)
    if value.get("type") == "auto" and set(value) <= {"type"}:
        return AUTO
    if value.get("type") != "static" or set(value) - {"type", "static"}:
        raise InvalidRequest(f"Invalid value for '{param}': the type is 'auto', or 'static' with 'static': "
                             "{'max_chunk_size_tokens', 'chunk_overlap_tokens'}.", param=param, code="invalid_value")
    static = value.get("static")
    if not isinstance(static, dict) or set(static) != {"max_chunk_size_tokens", "chunk_overlap_tokens"}:
        raise InvalidRequest(f"'{param}.static' needs 'max_chunk_size_tokens' and 'chunk_overlap_tokens'.",
                             param=f"{param}.static", code="invalid_value")
    size, overlap = static["max_chunk_size_tokens"], static["chunk_overlap_tokens"]
    for name, number in (("max_chunk_size_tokens", size), ("chunk_overlap_tokens", overlap)):
        if not is_integer(number):
            raise invalid_type(f"{param}.static.{name}", "an integer", number)
    if not MIN_MAX_TOKENS <= size <= MAX_MAX_TOKENS:
        raise InvalidRequest(f"'max_chunk_size_tokens' must be from {MIN_MAX_TOKENS} to {MAX_MAX_TOKENS}, got "
                             f"{size}.", param=f"{param}.static.max_chunk_size_tokens", code="invalid_value")
    if not 0 <= overlap <= size // 2:
        raise InvalidRequest(f"'chunk_overlap_tokens' must be from 0 to half of 'max_chunk_size_tokens' "
                             f"({size // 2}), got {overlap}.", param=f"{param}.static.chunk_overlap_tokens",
                             code="invalid_value")
    return ChunkingStrategy("static", size, overlap)




@dataclass(frozen=True)
class FileToAttach:
    file_id: str
    attributes: Attributes | None
    chunking: ChunkingStrategy | None  # None: the store's


@dataclass(frozen=True)
class VectorStoreCreate:
    name: str
    description: str
    metadata: dict[str, str] | None
    expires_after_days: int | None
    # Of its files, and of every file added later without a chunking_strategy of its own.
    chunking: ChunkingStrategy
    files: list[FileToAttach]


@dataclass(frozen=True)
class VectorStoreUpdate:
    # Only the fields the body sets; None in ``expires_after_days`` removes the policy.
    fields: dict[str, Any]


@dataclass(frozen=True)
class SearchRequest:
    queries: list[str]
    filters: Filter | None
    max_num_results: int
    ranking: Ranking
    rewrite_query: bool


def parse_vector_store_create(body: Any) -> VectorStoreCreate:
    fields = body_fields({} if body is None else body, (
        "name", "description", "metadata", "expires_after", "file_ids", "chunking_strategy"))
    return VectorStoreCreate(
        name=_text(fields.get("name", ""), "name", MAX_NAME),
        description=_text(fields.get("description", ""), "description", MAX_DESCRIPTION),
        metadata=parse_metadata(fields["metadata"]) if "metadata" in fields else None,
        expires_after_days=_expiry_days(fields["expires_after"]) if "expires_after" in fields else None,
        chunking=parse_chunking_strategy(fields.get("chunking_strategy")),
        files=[FileToAttach(file_id, None, None) for file_id in _file_ids(fields.get("file_ids", []), "file_ids")])


def parse_vector_store_update(body: Any) -> VectorStoreUpdate:
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    body_fields(body, ("name", "metadata", "expires_after"))
    fields: dict[str, Any] = {}
    if "name" in body:
        fields["name"] = _text(body["name"] or "", "name", MAX_NAME)
    if "metadata" in body:
        fields["metadata"] = parse_metadata(body["metadata"]) if body["metadata"] is not None else None
    if "expires_after" in body:
        fields["expires_after_days"] = None if body["expires_after"] is None else _expiry_days(body["expires_after"])
    return VectorStoreUpdate(fields)


def parse_file_create(body: Any) -> FileToAttach:
    fields = body_fields(body, ("file_id", "attributes", "chunking_strategy"), required=("file_id",))
    return _file_to_attach(fields, "")


def parse_file_update(body: Any) -> Attributes | None:
    if not isinstance(body, dict) or "attributes" not in body:
        raise InvalidRequest("Missing required parameter: 'attributes'.", param="attributes",
                             code="missing_required_parameter")
    body_fields(body, ("attributes",))
    return parse_attributes(body["attributes"], "attributes")


def parse_file_batch_create(body: Any) -> list[FileToAttach]:
    fields = body_fields(body, ("file_ids", "files", "attributes", "chunking_strategy"))
    if ("file_ids" in fields) == ("files" in fields):
        raise InvalidRequest("Give either 'file_ids' or 'files' (each file with its own attributes), not both and "
                             "not neither.", param="file_ids", code="missing_required_parameter")
    if "file_ids" in fields:
        attributes = parse_attributes(fields.get("attributes"), "attributes")
        chunking = _file_chunking(fields, "")
        files = [FileToAttach(file_id, attributes, chunking) for file_id in _file_ids(fields["file_ids"], "file_ids")]
    else:
        if "attributes" in fields or "chunking_strategy" in fields:
            raise InvalidRequest("With 'files', give 'attributes' and 'chunking_strategy' for each file.",
                                 param="files")
        entries = fields["files"]
        if not isinstance(entries, list):
            raise invalid_type("files", "an array", entries)
        files = []
        for n, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise invalid_type(f"files[{n}]", "an object", entry)
            entry_fields = body_fields(entry, ("file_id", "attributes", "chunking_strategy"), required=("file_id",))
            files.append(_file_to_attach(entry_fields, f"files[{n}]."))
    if not files:
        raise InvalidRequest("A file batch needs at least one file.", param="file_ids", code="empty_array")
    if len(files) > MAX_FILES_PER_CALL:
        raise InvalidRequest(f"A file batch has at most {MAX_FILES_PER_CALL} files, got {len(files)}.",
                             param="file_ids", code="array_above_max_length")
    if len({file.file_id for file in files}) < len(files):
        raise InvalidRequest("A file is given twice in the batch.", param="file_ids", code="invalid_value")
    return files


def parse_search(body: Any) -> SearchRequest:
    fields = body_fields(body, ("query", "filters", "max_num_results", "ranking_options", "rewrite_query"),
                         required=("query",))
    queries = fields["query"] if isinstance(fields["query"], list) else [fields["query"]]
    if not queries or len(queries) > MAX_QUERIES:
        raise InvalidRequest(f"'query' is a string or a list of 1 to {MAX_QUERIES} strings.", param="query")
    for query in queries:
        if not isinstance(query, str):
            raise invalid_type("query", "a string or an array of strings", fields["query"])
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidRequest(f"A query has at most {MAX_QUERY_CHARS} characters, got {len(query)}.",
                                 param="query", code="string_above_max_length")
    if not any(query.strip() for query in queries):
        raise InvalidRequest("'query' is empty.", param="query", code="invalid_value")
    rewrite = fields.get("rewrite_query", False)
    if not isinstance(rewrite, bool):
        raise invalid_type("rewrite_query", "a boolean", rewrite)
    return SearchRequest(queries=queries, filters=parse_filter(fields["filters"]) if "filters" in fields else None,
                         max_num_results=parse_max_num_results(fields.get("max_num_results", 10), "max_num_results"),
                         ranking=parse_ranking_options(fields.get("ranking_options"), "ranking_options"),
                         rewrite_query=rewrite)


def parse_attributes(value: Any, param: str) -> Attributes | None:
    """Up to 16 attributes: keys of at most 64 characters, values strings (of at most 512),
    numbers or booleans."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid_type(param, "an object", value)
    if len(value) > MAX_METADATA_PAIRS:
        raise InvalidRequest(f"'{param}' can have at most {MAX_METADATA_PAIRS} pairs, got {len(value)}.",
                             param=param, code="object_above_max_properties")
    for key, item in value.items():
        if len(key) > MAX_METADATA_KEY:
            raise InvalidRequest(f"Attribute keys can be at most {MAX_METADATA_KEY} characters.", param=param)
        if not isinstance(item, str | int | float | bool):
            raise invalid_type(f"{param}.{key}", "a string, a number or a boolean", item)
        if isinstance(item, str) and len(item) > MAX_METADATA_VALUE:
            raise InvalidRequest(f"Attribute values can be at most {MAX_METADATA_VALUE} characters.",
                                 param=f"{param}.{key}", code="string_above_max_length")
    return dict(value)


def _file_to_attach(fields: dict[str, Any], prefix: str) -> FileToAttach:
    if not isinstance(fields["file_id"], str):
        raise invalid_type(f"{prefix}file_id", "a string", fields["file_id"])
    return FileToAttach(fields["file_id"], parse_attributes(fields.get("attributes"), f"{prefix}attributes"),
                        _file_chunking(fields, prefix))


def _file_chunking(fields: dict[str, Any], prefix: str) -> ChunkingStrategy | None:
    """A file's own ``chunking_strategy``; None (absent or null): its store's."""
    value = fields.get("chunking_strategy")
    return None if value is None else parse_chunking_strategy(value, f"{prefix}chunking_strategy")


def _file_ids(value: Any, param: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(file_id, str) for file_id in value):
        raise invalid_type(param, "an array of strings", value)
    if len(value) > MAX_FILES_PER_CALL:
        raise InvalidRequest(f"'{param}' has at most {MAX_FILES_PER_CALL} files, got {len(value)}.", param=param,
                             code="array_above_max_length")
    return list(dict.fromkeys(value))


def _text(value: Any, param: str, most: int) -> str:
    if not isinstance(value, str):
        raise invalid_type(param, "a string", value)
    if len(value) > most:
        raise InvalidRequest(f"'{param}' has at most {most} characters, got {len(value)}.", param=param,
                             code="string_above_max_length")
    return value


def _expiry_days(value: Any) -> int:
    if not isinstance(value, dict):
        raise invalid_type("expires_after", "an object", value)
    body_fields(value, ("anchor", "days"), required=("anchor", "days"))
    if value["anchor"] != "last_active_at":
        raise InvalidRequest(f"Invalid value for 'expires_after.anchor': {value['anchor']!r}; the supported anchor "
                             "is 'last_active_at'.", param="expires_after.anchor", code="invalid_value")
    days = value["days"]
    if not is_integer(days) or not 1 <= days <= MAX_EXPIRY_DAYS:
        raise InvalidRequest(f"'expires_after.days' is an integer from 1 to {MAX_EXPIRY_DAYS}.",
                             param="expires_after.days", code="invalid_value")
    return days
