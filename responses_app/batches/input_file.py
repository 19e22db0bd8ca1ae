"""A batch's input file, checked line by line as OpenAI checks it: one JSON object per line
with a unique ``custom_id``, ``method`` POST, ``url`` the batch's endpoint, and a ``body``
that the endpoint's validation accepts (batches/endpoints.py), every body naming the same model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, cast

from responses_app.batches.endpoints import check_line_body
from responses_app.wire.errors import APIError

# The error list of a failed batch keeps at most this many (a file of 50,000 bad lines
# would otherwise make a Batch object of megabytes).
MAX_ERRORS = 100


@dataclass
class BatchLine:
    line: int  # 0-based
    custom_id: str
    body: dict[str, Any]


@dataclass
class CheckedFile:
    requests: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)  # the SDK's BatchError
    model: str = ""


def check_input_file(content: IO[bytes], endpoint: str) -> CheckedFile:
    """Every line of ``content`` checked; the file is good when ``errors`` is empty. Only the
    custom ids are kept: a file of 200 MB is never held whole."""
    checked = CheckedFile()
    seen: set[str] = set()
    for number, raw in _lines(content):
        try:
            line = _check_line(raw, number, endpoint, seen)
            model = line.body["model"]
            if checked.model and model != checked.model:
                raise APIError(f"Every request of a batch must use one model: line {number + 1} uses {model!r}, "
                               f"the first uses {checked.model!r}.", param="body.model", code="mismatched_model")
            checked.model = checked.model or model
            seen.add(line.custom_id)
            checked.requests += 1
        except APIError as error:
            if len(checked.errors) < MAX_ERRORS:
                checked.errors.append({"code": error.code or "invalid_request", "line": number + 1,
                                       "message": error.message, "param": error.param})
    if not checked.requests and not checked.errors:
        checked.errors.append({"code": "empty_file", "line": None, "message": "The input file has no requests.",
                               "param": None})
    return checked


def batch_lines(content: IO[bytes]) -> Iterator[BatchLine]:
    """The requests of a file that check_input_file found good."""
    for number, raw in _lines(content):
        request = json.loads(raw)
        yield BatchLine(line=number, custom_id=request["custom_id"], body=request["body"])


def _lines(content: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """The file's non-blank lines with their 0-based numbers, read a line at a time."""
    for number, raw in enumerate(content):
        if raw.strip():
            yield number, raw


def _check_line(raw: bytes, number: int, endpoint: str, seen: set[str]) -> BatchLine:
    try:
        request = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise APIError(f"Line {number + 1} is not valid JSON.", code="invalid_json_line") from None
    if not isinstance(request, dict):
        raise APIError(f"Line {number + 1} is not a JSON object.", code="invalid_json_line")
    custom_id = request.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id or len(custom_id) > 512:
        raise APIError("'custom_id' must be a string of 1 to 512 characters.", param="custom_id",
                       code="missing_required_parameter" if custom_id is None else "invalid_custom_id")
    if custom_id in seen:
        raise APIError(f"The custom_id {custom_id!r} is used by an earlier line; each must be unique.",
                       param="custom_id", code="duplicate_custom_id")
    if request.get("method") != "POST":
        raise APIError(f"'method' must be 'POST', not {request.get('method')!r}.", param="method",
                       code="invalid_method")
    if request.get("url") != endpoint:
        raise APIError(f"'url' must be the batch's endpoint {endpoint!r}, not {request.get('url')!r}.",
                       param="url", code="invalid_url")
    body = request.get("body")
    check_line_body(endpoint, body)
    return BatchLine(line=number, custom_id=custom_id, body=cast(dict[str, Any], body))  # check_line_body's
