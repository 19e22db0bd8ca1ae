"""Engine output tokens -> semantic events, one token at a time.

Harmony's ``StreamableParser`` does the parsing; this wrapper adds what it leaves out:

* events: a message starts when its header is complete (so an empty message still
  becomes an item), its text streams as deltas, and it finishes on ``<|end|>``,
  ``<|return|>`` or ``<|call|>`` (or at the end of the stream);
* strictness: StreamableParser takes any special token inside content as text (e.g. a
  stray ``<|start|>``) and lets a header run on past ``<|end|>``; both are rejected here,
  as are messages from other roles and unknown channels;
* counters for usage.

StreamableParser holds back incomplete UTF-8 (``last_content_delta`` is None until a
character is complete), so deltas never split a character. Its ``state`` and
``messages`` properties serialise all content so far, so they are read only on special
tokens, where the state can change, to keep a long stream linear.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NoReturn

from openai_harmony import HarmonyEncoding, HarmonyError, Role, StreamableParser, StreamState

from responses_app.harmony.encoding import get_encoding, max_token_id, special_token_id

# "client_call": a call of a client tool that the API types as an item of its own (shell,
# local_shell, apply_patch: harmony/client_tools), read whole before it becomes one.
# "tool_search": a call of the request's tool_search tool (harmony/tool_search).
MessageKind = Literal["reasoning", "message", "function_call", "custom_tool_call", "client_call", "tool_search",
                      "tool_call"]

FUNCTION_PREFIX = "functions."
# A model that never finishes a header would otherwise stream nothing until max_tokens.
# Real headers (role, channel, recipient, content type) take a few dozen tokens.
MAX_HEADER_TOKENS = 1024


@dataclass(frozen=True)
class MessageStarted:
    kind: MessageKind
    recipient: str | None
    name: str | None  # function name without "functions." (function, custom tool and client calls)
    channel: str | None = None
    namespace: str | None = None  # the namespace tool of a function_call, None for "functions"


@dataclass(frozen=True)
class ContentDelta:
    text: str


@dataclass(frozen=True)
class MessageFinished:
    kind: MessageKind
    recipient: str | None
    name: str | None
    text: str


ParserEvent = MessageStarted | ContentDelta | MessageFinished


class HarmonyOutputError(Exception):
    """The model's output is not valid harmony (or not something an assistant may say)."""


class OutputParser:
    """Feed engine tokens one by one; get events back."""

    def __init__(self, encoding: HarmonyEncoding | None = None,
                 function_namespaces: frozenset[str] = frozenset(),
                 call_kinds: Mapping[str, MessageKind] | None = None) -> None:
        self._encoding = encoding or get_encoding()
        # The response's namespace tools: a call to one of their functions is a function_call;
        # ``call_kinds``: the tools in "functions" whose calls are not function_calls (a custom
        # tool's are custom_tool_calls, a shell tool's a client_call).
        self._function_namespaces = function_namespaces
        self._call_kinds = call_kinds or {}
        self._parser = StreamableParser(self._encoding, Role.ASSISTANT)
        self._end = special_token_id("<|end|>")
        self._start = special_token_id("<|start|>")
        self._stops = {special_token_id("<|return|>"), special_token_id("<|call|>")}
        self._max_token_id = max_token_id()
        self._state = StreamState.HEADER  # with a role given, the parser starts inside a header
        self._current: MessageStarted | None = None
        self._emitted: list[str] = []  # deltas of the current message
        self._message_tokens = 0  # tokens of the current message so far, header included
        self._in_analysis = False
        self._failed = False
        self._closed = False
        self.reasoning_tokens = 0
        self.output_tokens = 0
        self.last_stop_token: int | None = None

    # --- public -----------------------------------------------------------------------

    def feed(self, token_id: int) -> list[ParserEvent]:
        """Process one output token; raise HarmonyOutputError on output harmony rejects."""
        self._check_usable()
        self.output_tokens += 1
        if not 0 <= token_id <= self._max_token_id:
            # Harmony would silently decode garbage for it.
            self._fail(f"Token id {token_id} is outside the harmony vocabulary.")
        self._count_token()
        special = self._encoding.is_special_token(token_id)
        if special:
            self._reject_misplaced_special(token_id)
        self._process(token_id)
        if not special:
            return self._after_text_token()
        return self._after_special_token(token_id)

    def prefill(self, token_ids: list[int]) -> list[ParserEvent]:
        """Tokens the server wrote into the prompt after ``<|start|>assistant`` (a forced
        call's header): parsed like the model's own, counted as input, not output."""
        counts = (self.output_tokens, self.reasoning_tokens)
        events = [event for token_id in token_ids for event in self.feed(token_id)]
        self.output_tokens, self.reasoning_tokens = counts
        return events

    def carry_header_tokens(self, count: int) -> None:
        """The first message's header began with ``count`` tokens counted elsewhere as
        output (a continued turn's ``<|start|>assistant``): reasoning too if it is analysis."""
        self._message_tokens += count

    def close(self) -> list[ParserEvent]:
        """End of the engine stream: finish a message cut off mid-content."""
        if self._closed:
            return []
        self._check_usable()
        self._closed = True
        if self.output_tokens == 0:
            return []  # no output is not malformed output
        before = len(self._parser.messages)
        try:
            self._parser.process_eos()
        except HarmonyError as error:
            self._failed = True
            raise HarmonyOutputError(f"Model output ended inside a message header: {error}") from error
        if self._current is None or len(self._parser.messages) == before:
            return []
        self.last_stop_token = None
        return self._finish_message()

    # --- token handling ---------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._failed:
            raise HarmonyOutputError("The output parser already rejected this stream.")
        if self._closed:
            raise RuntimeError("OutputParser.feed/close called after close().")

    def _count_token(self) -> None:
        self._message_tokens += 1
        if self._in_analysis:
            self.reasoning_tokens += 1
        if self._state == StreamState.HEADER and self._message_tokens > MAX_HEADER_TOKENS:
            self._fail(f"Message header longer than {MAX_HEADER_TOKENS} tokens.")

    def _reject_misplaced_special(self, token_id: int) -> None:
        if self._state == StreamState.CONTENT and token_id not in self._stops and token_id != self._end:
            self._fail(f"Unexpected special token {self._token_text(token_id)!r} inside message content.")
        if self._state == StreamState.HEADER and (token_id in self._stops or token_id in (self._end, self._start)):
            self._fail(f"Message header ended by {self._token_text(token_id)!r} before <|message|>.")

    def _process(self, token_id: int) -> None:
        try:
            self._parser.process(token_id)
        except HarmonyError as error:
            self._fail(f"Invalid harmony output at token {token_id}: {error}")

    def _after_text_token(self) -> list[ParserEvent]:
        if self._state != StreamState.CONTENT:
            return []
        delta = self._parser.last_content_delta
        if not delta:
            return []  # an incomplete UTF-8 character: harmony holds it back
        self._emitted.append(delta)
        return [ContentDelta(delta)]

    def _after_special_token(self, token_id: int) -> list[ParserEvent]:
        previous, self._state = self._state, self._parser.state
        if previous == StreamState.HEADER and self._state == StreamState.CONTENT:
            return [self._start_message()]
        if previous == StreamState.CONTENT and self._state != StreamState.CONTENT:
            self.last_stop_token = token_id if token_id in self._stops else None
            return self._finish_message()
        return []

    # --- messages ---------------------------------------------------------------------

    def _start_message(self) -> MessageStarted:
        role = self._parser.current_role
        if role != Role.ASSISTANT:
            self._fail(f"The model wrote a message as {getattr(role, 'value', role)!r}, not as the assistant.")
        channel = self._parser.current_channel
        recipient = self._parser.current_recipient or None
        kind, name = self._classify(channel, recipient)
        namespace = recipient.partition(".")[0] if kind in ("function_call", "custom_tool_call") and recipient else None
        if channel == "analysis":
            # The header tokens belong to the analysis message too.
            self.reasoning_tokens += self._message_tokens
            self._in_analysis = True
        self._current = MessageStarted(kind=kind, recipient=recipient, name=name, channel=channel,
                                       namespace=None if namespace == FUNCTION_PREFIX[:-1] else namespace)
        self._emitted = []
        return self._current

    def _classify(self, channel: str | None, recipient: str | None) -> tuple[MessageKind, str | None]:
        if recipient:
            namespace, _, name = recipient.partition(".")
            if recipient.startswith(FUNCTION_PREFIX) or namespace in self._function_namespaces:
                if not name:
                    self._fail("Function call without a function name.")
                if recipient.startswith(FUNCTION_PREFIX) and name in self._call_kinds:
                    return self._call_kinds[name], name
                return "function_call", name
            return "tool_call", None
        if channel == "analysis":
            return "reasoning", None
        if channel in ("final", "commentary"):
            return "message", None
        self._fail(f"Message on unknown channel {channel!r}.")

    def _finish_message(self) -> list[ParserEvent]:
        current = self._current
        assert current is not None
        messages = self._parser.messages
        text = "".join(getattr(part, "text", "") for part in messages[-1].content) if messages else ""
        emitted = "".join(self._emitted)
        events: list[ParserEvent] = []
        if text != emitted:
            # Bytes harmony held back until the end (a character cut off at EOS) come last.
            if not text.startswith(emitted):
                self._fail("Streamed deltas diverged from the parsed message text.")
            events.append(ContentDelta(text[len(emitted) :]))
        events.append(MessageFinished(kind=current.kind, recipient=current.recipient, name=current.name, text=text))
        self._current = None
        self._emitted = []
        self._message_tokens = 0
        self._in_analysis = False
        return events

    def _fail(self, reason: str) -> NoReturn:
        self._failed = True
        raise HarmonyOutputError(reason)

    def _token_text(self, token_id: int) -> str:
        return self._encoding.decode([token_id])
