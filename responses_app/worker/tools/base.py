"""What every tool call of a response shares: the protocol the generation loop drives
(``delta`` and ``finished`` as the model writes the call, then ``execute``), the result the
model reads, and how a call's blocking work runs beside the response's lease."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from django.db import close_old_connections, connection

from responses_app.wire.tool_types import LoadedTool

T = TypeVar("T")

# The server-side tool calls, as output items (max_tool_calls counts them).
SERVER_CALL_TYPES = frozenset({"code_interpreter_call", "web_search_call", "file_search_call", "mcp_call"})
# The output of a call whose worker was lost while it ran (worker/continuation.py): the
# model reads it, and may call again.
INTERRUPTED = ("The call was interrupted: the server running it was lost while it ran. It may have run in part or "
               "in full; check its effects before calling it again.")


class ToolLoopFailure(Exception):
    """Ends the response as failed: a tool's server cannot be used at all."""


@dataclass(frozen=True)
class ToolResult:
    """The tool's harmony message back to the model."""

    author: str  # python, browser.search, <server_label>.<tool>
    text: str
    channel: str
    loaded: tuple[LoadedTool, ...] = ()  # the tools a tool search loaded, declared after the text


class ToolCall(Protocol):
    def delta(self, text: str) -> None: ...

    def finished(self, text: str) -> None: ...

    def execute(self) -> ToolResult | None:
        """Run the tool; None when the response must end here (an approval request)."""


class WholeCall:
    """A call that shows nothing while the model writes it: its item is put out, or its
    tool run, once its arguments are whole."""

    arguments: str = ""

    def delta(self, text: str) -> None:
        """Nothing streams."""

    def finished(self, text: str) -> None:
        self.arguments = text


class Waiter(Protocol):
    """Runs a blocking call for the response's code and returns its value (run_in_thread,
    with the response's tick bound)."""

    def __call__(self, work: Callable[[], T], /) -> T: ...


def run_in_thread(work: Callable[[], T], tick: Callable[[], None], poll_s: float = 0.2) -> T:
    """Run a tool in its own thread while this one keeps the lease and watches for cancel
    (``tick`` may raise CancelRequested: the tool then finishes or times out on its own)."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        close_old_connections()
        try:
            outcome["value"] = work()
        except BaseException as error:  # handed to the waiting thread
            outcome["error"] = error
        finally:
            connection.close()

    thread = threading.Thread(target=target, name="tool-call", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(poll_s)
        tick()
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


def json_object(text: str) -> dict[str, Any]:
    """A call's arguments as the JSON object they must be (ValueError: they are not)."""
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError as error:
        raise ValueError(f"The tool arguments are not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise ValueError("The tool arguments must be a JSON object.")
    return value
