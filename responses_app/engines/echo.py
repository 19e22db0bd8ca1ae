"""A deterministic engine that needs no weights: for tests and the offline demo.

It reads the harmony prompt it is given and answers the LAST user message:

* Plain text: a short analysis, then a final answer quoting the text.
* A "script" (text starting with ``<|channel|>``): harmony completion markup that the
  engine outputs verbatim, one segment per ``generate`` call; a prompt that ends with part
  of its segment already written (a forced call's header, or the messages a lost worker
  committed) gets the rest of it. A segment ends right
  after ``<|call|>`` or ``<|return|>`` (or at the end of the script). Later calls skip
  the segments whose tool calls the prompt already holds after that user message, so a
  script drives a whole tool-calling exchange, within one response or across several.
  ``{tool_output}`` in a script stands for the text of the prompt's last tool message,
  so that a test can see what a tool told the model.
* A prompt whose assistant message starts with a call's header (a forcing ``tool_choice``
  prefills it; so does a lost worker's open call): that call, its arguments made from the
  user's text (a search for it; code that prints it; ``{}`` for a function), so that the
  demo shows a forced tool working. A header that leaves the recipient open (``required``
  with several tools, a namespace) is completed with the first such tool of the prompt.
* The compaction request (base.SUMMARY_REQUEST): a digest of the messages before it,
  each one's role and the start of its text, standing in for a model's summary.
* A reasoning summary request (harmony.prompt.REASONING_SUMMARY_REQUEST): the first sentence of
  the reasoning it is given.

Its prefix cache (prefix_cache.py) reports ``cached_tokens`` as vLLM's does, per cache salt
(tenant), and its prefill clock delays a first token by the prompt tokens it recomputes.

Every call runs on the engine host's shared asyncio loop, so it never blocks.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass

from openai_harmony import HarmonyEncoding, Message, Role, StreamableParser

from responses_app.engines.base import SUMMARY_REQUEST, EngineChunk, EngineDead, SamplingParams
from responses_app.engines.prefix_cache import PrefillClock, PrefixCache, block_hashes
from responses_app.harmony import file_search
from responses_app.harmony.continuations import open_recipient
from responses_app.harmony.encoding import get_encoding, markup_tokens, special_token_id
from responses_app.harmony.messages import BROWSER_NAMESPACE, FUNCTION_CALL_CONTENT_TYPE, PYTHON_RECIPIENT
from responses_app.harmony.prompt import REASONING_SUMMARY_REQUEST

SCRIPT_PREFIX = "<|channel|>"
MESSAGE_START = "<|message|>"
TOOL_OUTPUT_PLACEHOLDER = "{tool_output}"
CHUNK_TOKENS = 3  # small, so that message boundaries fall inside a chunk
ABORTED_HISTORY = 1000
EXHAUSTED_TEXT = "(echo: the script has no more segments)"
DIGEST_CHARS = 80


@dataclass(frozen=True)
class PromptView:
    """What the echo engine needs from a prompt."""

    user_text: str  # the last user message ("" if none)
    calls_after_user: int  # assistant tool calls the prompt holds after that message
    last_tool_output: str = ""  # the text of the last tool message after it
    earlier: tuple[tuple[str, str], ...] = ()  # (role, text) of the messages before it, system left out


class EchoEngine:
    def __init__(self, default_token_delay_ms: float = 0.0, prefix_cache_tokens: int = 0,
                 prefill_tokens_per_s: float = 0.0) -> None:
        self._default_delay_ms = default_token_delay_ms
        self.prefix_cache = PrefixCache(prefix_cache_tokens)
        self.prefill_clock = PrefillClock(prefill_tokens_per_s)
        self._running: set[str] = set()
        self._abort_requested: set[str] = set()
        self._aborted: deque[str] = deque(maxlen=ABORTED_HISTORY)

    # --- Engine protocol ----------------------------------------------------------------

    async def generate(
        self, prompt_token_ids: list[int], params: SamplingParams, request_id: str
    ) -> AsyncIterator[EngineChunk]:
        self._running.add(request_id)
        emitted: list[int] = []
        prompt_hashes: list[int] = []
        try:
            prompt_hashes = block_hashes(prompt_token_ids, params.cache_salt)
            cached = self.prefix_cache.admit(prompt_token_ids, params.cache_salt, prompt_hashes)
            prefill_s = self.prefill_clock.book(len(prompt_token_ids) - cached)
            if prefill_s:
                await asyncio.sleep(prefill_s)
            tokens = self.plan_output(prompt_token_ids)
            async for chunk in self._stream(tokens, params, request_id, cached):
                emitted += chunk.token_ids
                yield chunk
        finally:
            self._running.discard(request_id)
            self._abort_requested.discard(request_id)
            # The output's blocks too, as vLLM keeps them: the next turn's prompt starts so.
            self.prefix_cache.hold(prompt_token_ids + emitted, params.cache_salt, known=prompt_hashes)

    async def abort(self, request_id: str) -> None:
        # Recorded even when nothing runs under this id, so tests can see the attempt.
        self._aborted.append(request_id)
        if request_id in self._running:
            self._abort_requested.add(request_id)

    async def start(self) -> None:
        """Nothing to load: the echo engine has no weights."""

    async def shutdown(self) -> None:
        """Nothing to release."""

    def is_dead(self) -> bool:
        return False  # a simulated death (echo_die_after_tokens) only fails one request

    def prefill_backlog_s(self) -> float:
        return self.prefill_clock.backlog_s()

    # --- introspection for tests --------------------------------------------------------

    def running_requests(self) -> set[str]:
        return set(self._running)

    def aborted_requests(self) -> list[str]:
        """Ids passed to ``abort``, oldest first (the last ABORTED_HISTORY)."""
        return list(self._aborted)

    # --- output planning ----------------------------------------------------------------

    def plan_output(self, prompt_token_ids: list[int]) -> list[int]:
        """The whole output this prompt gets, before max_tokens and stop tokens."""
        encoding = get_encoding()
        prompt, prefill = split_prefill(encoding, prompt_token_ids)
        user_text = last_user_text(encoding, prompt)
        if user_text == SUMMARY_REQUEST:
            tokens = echo_final(encoding, digest(read_prompt(encoding, prompt).earlier))
        elif user_text.startswith(REASONING_SUMMARY_REQUEST):
            tokens = echo_final(encoding, first_sentence(user_text.split("\n\n", 1)[-1]))
        elif user_text.lstrip().startswith(SCRIPT_PREFIX):
            view = read_prompt(encoding, prompt)
            script = user_text.lstrip().replace(TOOL_OUTPUT_PLACEHOLDER, view.last_tool_output)
            tokens = script_segment(encoding, script, view.calls_after_user)
        else:
            tokens = forced_call(encoding, prefill, prompt, user_text) or echo_answer(encoding, user_text)
        # A continued output (a lost worker's response, worker/generation) has the assistant's
        # messages so far after the last turn's start: the answer goes on after all of them.
        for prefix in (assistant_run(encoding, prompt_token_ids), prefill):
            if starts_with(encoding, tokens, prefix):
                return without_prefill(encoding, tokens, prefix)
        return tokens

    # --- streaming ----------------------------------------------------------------------

    async def _stream(self, tokens: list[int], params: SamplingParams, request_id: str,
                      cached: int) -> AsyncIterator[EngineChunk]:
        delay_s = self._delay_ms(params) / 1000.0
        # With a delay each token is "generated" separately, so it is delivered at once.
        chunk_size = 1 if delay_s > 0 else CHUNK_TOKENS
        stops = set(params.stop_token_ids)
        limit = len(tokens) if params.max_tokens is None else min(len(tokens), max(params.max_tokens, 0))
        pending: list[int] = []
        first = True
        die_after = _knob(params, "echo_die_after_tokens")
        # Each token is due ``delay_s`` after the one before it was due, not after it was
        # sent: a busy loop's late wake-ups do not lower the rate the delay sets.
        due = asyncio.get_running_loop().time()
        for emitted, token in enumerate(tokens[:limit]):
            if request_id in self._abort_requested:
                return
            if die_after is not None and emitted >= die_after:
                # Lets tests see what a crashed engine (vLLM's EngineDeadError) does to a response.
                raise EngineDead(f"the echo engine was told to die after {die_after:g} tokens")
            if delay_s > 0:
                due += delay_s
                await asyncio.sleep(due - asyncio.get_running_loop().time())
                if request_id in self._abort_requested:
                    return
            pending.append(token)
            stop = token in stops
            if len(pending) >= chunk_size or stop:
                yield EngineChunk(token_ids=pending, cached_tokens=cached if first else None,
                                  logprobs=echo_logprobs(pending, params.logprobs))
                first, pending = False, []
                # Let other requests on the shared loop run, even without a delay.
                await asyncio.sleep(0)
            if stop:
                return
        if pending and request_id not in self._abort_requested:
            yield EngineChunk(token_ids=pending, cached_tokens=cached if first else None,
                              logprobs=echo_logprobs(pending, params.logprobs))

    def _delay_ms(self, params: SamplingParams) -> float:
        value = _knob(params, "echo_token_delay_ms")
        return value if value is not None else float(self._default_delay_ms)


def _knob(params: SamplingParams, name: str) -> float | None:
    """A test knob from the request's metadata (``echo_token_delay_ms``,
    ``echo_die_after_tokens``): a number as a string; anything else is no knob."""
    try:
        return float(params.metadata[name])
    except (KeyError, ValueError):
        return None


# --- prompt reading --------------------------------------------------------------------


def read_prompt(encoding: HarmonyEncoding, prompt_token_ids: list[int]) -> PromptView:
    """Find the last user message and count the tool calls after it."""
    messages = _prompt_messages(encoding, prompt_token_ids)
    last_user = max((i for i, m in enumerate(messages) if m.author.role == Role.USER), default=None)
    if last_user is None:
        return PromptView(user_text="", calls_after_user=0)
    after = messages[last_user + 1 :]
    calls = sum(1 for message in after if _is_tool_call(message))
    outputs = [_text(message) for message in after if message.author.role == Role.TOOL]
    earlier = tuple((str(m.author.role.value), _text(m)) for m in messages[:last_user] if m.author.role != Role.SYSTEM)
    return PromptView(user_text=_text(messages[last_user]), calls_after_user=calls,
                      last_tool_output=outputs[-1] if outputs else "", earlier=earlier)


def last_user_text(encoding: HarmonyEncoding, prompt_token_ids: list[int]) -> str:
    """The text of the last user message (read_prompt's ``user_text``), found from the end
    of the prompt: harmony's parser takes about 8 µs a token, most of an echo's CPU for a
    short answer. User text holds no special tokens (harmony encodes it as text)."""
    start, message, end = special_token_id("<|start|>"), special_token_id("<|message|>"), special_token_id("<|end|>")
    for index in range(len(prompt_token_ids) - 2, -1, -1):
        if prompt_token_ids[index] == start and encoding.decode(prompt_token_ids[index + 1 : index + 2]) == "user":
            try:
                body = prompt_token_ids.index(message, index) + 1
            except ValueError:
                return ""
            try:
                stop = prompt_token_ids.index(end, body)
            except ValueError:
                stop = len(prompt_token_ids)
            return encoding.decode(prompt_token_ids[body:stop])
    return ""


def split_prefill(encoding: HarmonyEncoding, prompt_token_ids: list[int]) -> tuple[list[int], list[int]]:
    """The prompt up to its last ``<|start|>assistant``, and what a forced tool_choice
    prefilled after it (the start of the assistant's message)."""
    start = special_token_id("<|start|>")
    for index in range(len(prompt_token_ids) - 2, -1, -1):
        if prompt_token_ids[index] == start:
            if encoding.decode(prompt_token_ids[index + 1 : index + 2]) == "assistant":
                return prompt_token_ids[: index + 2], prompt_token_ids[index + 2 :]
            break
    return prompt_token_ids, []


def assistant_run(encoding: HarmonyEncoding, prompt_token_ids: list[int]) -> list[int]:
    """What the assistant has written since the turn began: the tokens after the
    ``<|start|>assistant`` that follows the last message of another author or the last
    call (its finished messages, then the open one's start)."""
    start, message = special_token_id("<|start|>"), special_token_id("<|message|>")
    run_start, header_end = None, len(prompt_token_ids)
    for index in range(len(prompt_token_ids) - 2, -1, -1):
        if prompt_token_ids[index] == message:
            header_end = index
        if prompt_token_ids[index] != start:
            continue
        if encoding.decode(prompt_token_ids[index + 1 : index + 2]) != "assistant":
            break
        if run_start is not None and " to=" in encoding.decode(prompt_token_ids[index + 2 : header_end]):
            break  # a call ends the run before it
        run_start = index
    return prompt_token_ids[run_start + 2 :] if run_start is not None else []


def starts_with(encoding: HarmonyEncoding, tokens: list[int], prefix: list[int]) -> bool:
    return bool(prefix) and encoding.decode(tokens).startswith(encoding.decode(prefix))


def without_prefill(encoding: HarmonyEncoding, tokens: list[int], prefill: list[int]) -> list[int]:
    """The planned output after the prefilled part, as a model would continue it (the
    prefill is compared as text: it may be tokenized otherwise)."""
    return encoding.encode(encoding.decode(tokens)[len(encoding.decode(prefill)) :], allowed_special="all")


def _prompt_messages(encoding: HarmonyEncoding, prompt_token_ids: list[int]) -> list[Message]:
    # The prompt ends inside the open "<|start|>assistant" header, which is never completed,
    # so only the finished messages are reported. User text cannot contain special tokens
    # (harmony encodes it as plain text), so the split at special tokens is safe.
    parser = StreamableParser(encoding, None)
    for token in prompt_token_ids:
        parser.process(token)
    return parser.messages


def _is_tool_call(message: Message) -> bool:
    # A past call counts whether it was rendered ending in <|call|> (harmony does) or <|end|>.
    return message.author.role == Role.ASSISTANT and bool(message.recipient) and message.recipient != "assistant"


def _text(message: Message) -> str:
    return "".join(getattr(part, "text", "") for part in message.content)


# --- outputs ---------------------------------------------------------------------------


def echo_answer(encoding: HarmonyEncoding, user_text: str) -> list[int]:
    """A short analysis and a final answer quoting the user."""

    def plain(text: str) -> list[int]:
        # User text that looks like special tokens stays text.
        return encoding.encode(text, disallowed_special=())

    return [
        *markup_tokens("<|channel|>analysis<|message|>"),
        *plain(f'The user wrote: "{user_text}". I will echo it back.'),
        *markup_tokens("<|end|><|start|>assistant<|channel|>final<|message|>"),
        *plain(f"You said: {user_text}"),
        *markup_tokens("<|return|>"),
    ]


def forced_call(encoding: HarmonyEncoding, prefill: list[int], prompt: list[int], user_text: str) -> list[int] | None:
    """The call whose header the prefill starts (None when it starts none): the header
    completed where it leaves the recipient open, then arguments made from the user's text."""
    written = encoding.decode(prefill)
    before, trigger, after = written.partition(" to=")
    if not trigger:
        return None
    opened = open_recipient(prefill)
    if opened is None:  # the whole header: up to its <|message|>
        header = written[: written.index(MESSAGE_START)]
        recipient = re.match(r"[^\s<]*", after).group()  # type: ignore[union-attr]
    else:  # "to=" or "to=namespace.": the prompt's first tool that fits
        recipient = next((tool for tool in declared_tools(encoding.decode(prompt)) if tool.startswith(opened)), "")
        if not recipient:
            return None
        kind = "code" if recipient == PYTHON_RECIPIENT or recipient.startswith(f"{BROWSER_NAMESPACE}.") \
            else FUNCTION_CALL_CONTENT_TYPE
        header = f"{before}{trigger}{recipient} {kind}"
    arguments = _call_arguments(recipient, FUNCTION_CALL_CONTENT_TYPE in header, user_text)
    return [*encoding.encode(f"{header}{MESSAGE_START}", allowed_special="all"),
            *encoding.encode(arguments, disallowed_special=()),
            *markup_tokens("<|call|>")]


def declared_tools(prompt_text: str) -> list[str]:
    """The recipients a prompt offers, in its order: ``python`` and each namespace's functions."""
    tools = [PYTHON_RECIPIENT] if f"## {PYTHON_RECIPIENT}\n" in prompt_text else []
    for namespace, body in re.findall(r"namespace (\S+) \{(.*?)\} // namespace \1", prompt_text, re.DOTALL):
        tools += [f"{namespace}.{name}" for name in re.findall(r"^type (\w+) =", body, re.MULTILINE)]
    return tools


def _call_arguments(recipient: str, json_call: bool, user_text: str) -> str:
    if recipient == PYTHON_RECIPIENT:
        return f"print({user_text!r})"
    if recipient == f"{BROWSER_NAMESPACE}.search":
        return json.dumps({"query": user_text})
    if recipient == file_search.RECIPIENT:
        return json.dumps({"queries": [user_text]})
    return "{}" if json_call else user_text  # a function's arguments; a custom tool's input


def digest(messages: tuple[tuple[str, str], ...]) -> str:
    """The echo engine's summary: each earlier message's role and its first words."""
    lines = [f"{role}: {text[:DIGEST_CHARS]}" for role, text in messages if text]
    return "Summary of the earlier conversation. " + " | ".join(lines)


def echo_logprobs(tokens: list[int], alternatives: int | None) -> list[list[tuple[int, float]]] | None:
    """The echo engine is certain of each token (logprob 0) and gives its alternatives
    (the next token ids) logprobs of -20, -21, ..."""
    if alternatives is None:
        return None
    return [[(token, 0.0), *((token + 1 + rank, -20.0 - rank) for rank in range(alternatives))] for token in tokens]


def first_sentence(text: str) -> str:
    """The echo engine's summary of a reasoning: its first sentence."""
    head, dot, _ = text.strip().partition(". ")
    return (head + ".") if dot else head


def script_segments(encoding: HarmonyEncoding, script: str) -> list[list[int]]:
    """The script's tokens cut right after each <|call|> / <|return|>."""
    stops = {special_token_id("<|call|>"), special_token_id("<|return|>")}
    segments: list[list[int]] = [[]]
    for token in encoding.encode(script, allowed_special="all"):
        segments[-1].append(token)
        if token in stops:
            segments.append([])
    return [_without_assistant_start(encoding, segment) for segment in segments if segment]


def _without_assistant_start(encoding: HarmonyEncoding, segment: list[int]) -> list[int]:
    # The prompt already ends with "<|start|>assistant"; a script may repeat it after a call.
    start = special_token_id("<|start|>")
    if len(segment) >= 2 and segment[0] == start and encoding.decode(segment[1:2]) == "assistant":
        return segment[2:]
    return segment


def script_segment(encoding: HarmonyEncoding, script: str, done: int) -> list[int]:
    """The segment after the ``done`` ones the prompt already holds."""
    segments = script_segments(encoding, script)
    if done < len(segments):
        return segments[done]
    return echo_final(encoding, EXHAUSTED_TEXT)


def echo_final(encoding: HarmonyEncoding, text: str) -> list[int]:
    return [
        *markup_tokens("<|channel|>final<|message|>"),
        *encoding.encode(text, disallowed_special=()),
        *markup_tokens("<|return|>"),
    ]
