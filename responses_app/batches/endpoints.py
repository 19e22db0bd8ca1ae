"""The endpoints a batch runs, each line's body as its endpoint takes it: ``/v1/responses``
(a Responses create) and ``/v1/chat/completions`` (a chat completion, said as the Responses
create it is). A line's result body is what the endpoint would have answered."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from responses_app.chat_completions.completion import completion_object
from responses_app.chat_completions.requests import parse_chat_completion
from responses_app.validation.create import parse_create_request
from responses_app.validation.request import CreateRequest
from responses_app.wire.errors import APIError, InvalidRequest

JsonObject = dict[str, Any]
RESPONSES = "/v1/responses"
CHAT_COMPLETIONS = "/v1/chat/completions"
ENDPOINTS = (RESPONSES, CHAT_COMPLETIONS)


@dataclass(frozen=True)
class LineRequest:
    create: CreateRequest
    stream: bool
    # A 4xx of the create (a quota, a call id no call has) naming the endpoint's own parameter.
    renamed: Callable[[APIError], APIError] = lambda error: error


def check_line_body(endpoint: str, body: Any) -> None:
    """A line's body as the input file's check takes it: a 400 names its parameter under
    ``body``; no line may stream."""
    try:
        line = parse_line(endpoint, body)
    except APIError as error:
        raise APIError(error.message, param=f"body.{error.param}" if error.param else "body",
                       code=error.code or "invalid_request") from None
    if line.stream:
        raise APIError("A batch's requests cannot stream: 'stream' must be false or absent.", param="body.stream",
                       code="invalid_request")


def parse_line(endpoint: str, body: Any) -> LineRequest:
    """A line's body as the create it makes (the create's own 400s, as a request gets them)."""
    if endpoint != CHAT_COMPLETIONS:
        create = parse_create_request(body)
        return LineRequest(create, create.stream)
    completion = parse_chat_completion(body)
    if completion.n != 1:
        # A line is one request, run as one response; n choices would be n.
        raise InvalidRequest("A batch's chat completions make one choice each ('n': 1).", param="n",
                             code="unsupported_parameter")
    if completion.create.params.chat.stored:
        # Its result is the output file's line: nothing would list or retrieve it.
        raise InvalidRequest("A batch's chat completions are not stored: leave 'store' false.", param="store",
                             code="unsupported_parameter")
    return LineRequest(completion.create, completion.stream, completion.renamed)


def result_body(endpoint: str, response: JsonObject, logprobs: bool) -> JsonObject:
    """A completed line's result: ``response`` (a Response object) as its endpoint answers;
    ``logprobs``: the line asked for the answer's."""
    return completion_object([response], logprobs) if endpoint == CHAT_COMPLETIONS else response
