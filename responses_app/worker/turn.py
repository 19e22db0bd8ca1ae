"""The states of one engine turn of a response (worker/generation.py): why an engine call
stopped before its end, and how the turn ended.

A turn is one or more engine calls over the same prompt, each continuing where the last
stopped (vLLM's prefix cache holds what came before):

- the first call runs to its end (``None``: a stop token, or the budget spent), or stops
  early with one of the ``EarlyStop``s below;
- ``SUMMARY_DUE``: a reasoning item ended and ``reasoning.summary`` asks for its summary:
  the summary is written by a side call (worker/side_calls.py), then the next call goes
  on, unless steering input is queued (``STEERED``);
- ``GRAMMAR``: the model began a custom tool's call (or a file search's arguments): the
  next call goes on under that grammar;
- ``FINAL_ANSWER``: structured outputs constrain the final answer only: the next call
  goes on under the output format;
- ``TOOL_CALL``: a server-side call is whole: the turn ends with it (``TurnEnd.call``)
  and the tool loop runs it;
- ``STEERED``: steering input is queued and the model is at a safe boundary: the
  response ends ``incomplete`` (its successor follows it);
- ``STOP_SEQUENCE``: a completion's stop sequence came in a message's text: the message
  ends before it, and the response with it (worker/stop_sequences.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from responses_app.models import ResponseStatus
from responses_app.worker.tools.base import ToolCall


class EarlyStop(Enum):
    SUMMARY_DUE = "summary_due"
    GRAMMAR = "grammar"
    FINAL_ANSWER = "final_answer"
    TOOL_CALL = "tool_call"
    STEERED = "steered"
    STOP_SEQUENCE = "stop_sequence"


@dataclass
class TurnEnd:
    """How one engine turn ended: with a server-side tool call to run, or with the response's end."""

    tokens: list[int]  # the assistant's tokens this turn (a prefilled header included)
    call: ToolCall | None = None
    status: str = ResponseStatus.COMPLETED
    details: dict[str, Any] | None = None


class ResponseFailure(Exception):
    """Ends the response as failed with this message (shown to the client). ``code`` is
    one of the SDK's ResponseError codes (server_error, invalid_prompt, ...)."""

    def __init__(self, message: str, code: str = "server_error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
