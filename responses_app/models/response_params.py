"""The parameters of a create, typed: what validation builds (validation/create.py), what a
Response row stores as JSON (``Response.request``), and what the services, the prompt, the
worker and the echoed response object read (``Response.params``).

A row stores ``to_stored()``; ``from_stored`` reads any row back, those written before a
field existed included: a key a row lacks takes the value the API documents for it (the
value the response object echoes). The tools, and the tools a tool choice names, are
wire/tool_types.py's; a structured output's schema stays the JSON Schema that was sent
(checked by validation/create.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from responses_app.wire.tool_types import JsonObject, Tool, ToolReference, tools_from_stored


@dataclass(frozen=True)
class Reasoning:
    """``reasoning``: the effort (any the SDK names; harmony/prompt.HARMONY_EFFORT maps it)
    and the summary asked for ("auto", "concise", "detailed" or None)."""

    effort: str | None = None
    summary: str | None = None
    context: Any = None  # echoed as sent, when sent

    @classmethod
    def from_stored(cls, value: JsonObject | None) -> Reasoning:
        value = value or {}
        return cls(effort=value.get("effort"), summary=value.get("summary"), context=value.get("context"))

    def to_stored(self) -> JsonObject:
        stored: JsonObject = {"effort": self.effort, "summary": self.summary}
        if self.context is not None:
            stored["context"] = self.context
        return stored


@dataclass(frozen=True)
class TextFormat:
    """``text.format``: ``text``, ``json_object``, or ``json_schema`` with its name, schema,
    strict flag and description (checked by validation/create.py)."""

    type: str = "text"
    name: str | None = None
    schema: JsonObject | None = None
    strict: bool = False
    description: str | None = None

    @property
    def constrained(self) -> bool:
        """Whether the answer is held to a format (structured outputs)."""
        return self.type != "text"

    @classmethod
    def from_stored(cls, value: JsonObject | None) -> TextFormat:
        value = value or {"type": "text"}
        return cls(type=value["type"], name=value.get("name"), schema=value.get("schema"),
                   strict=bool(value.get("strict")), description=value.get("description"))

    def to_stored(self) -> JsonObject:
        if self.type != "json_schema":
            return {"type": self.type}
        stored: JsonObject = {"type": self.type, "name": self.name, "schema": self.schema, "strict": self.strict}
        if self.description is not None:
            stored["description"] = self.description
        return stored


@dataclass(frozen=True)
class TextOptions:
    """``text``: the output's format and the verbosity said to the model."""

    format: TextFormat = field(default_factory=TextFormat)
    verbosity: str | None = None

    @classmethod
    def from_stored(cls, value: JsonObject | None) -> TextOptions:
        value = value or {}
        return cls(format=TextFormat.from_stored(value.get("format")), verbosity=value.get("verbosity"))

    def to_stored(self) -> JsonObject:
        stored: JsonObject = {"format": self.format.to_stored()}
        if self.verbosity is not None:
            stored["verbosity"] = self.verbosity
        return stored


@dataclass(frozen=True)
class ToolChoice:
    """``tool_choice``, as validation/tools.py checked it against the tools:

    - ``mode``: "auto", "none" or "required";
    - ``named``: the one tool a choice forces (a function by its name, an MCP server or one
      of its tools, a built-in tool by its type), with ``mode`` "required";
    - ``allowed``: the tools of an ``allowed_tools`` choice (``mode`` "auto" or "required").
    """

    mode: str = "auto"
    named: ToolReference | None = None
    allowed: tuple[ToolReference, ...] | None = None

    @classmethod
    def from_stored(cls, value: str | JsonObject | None) -> ToolChoice:
        if value is None or isinstance(value, str):
            return cls(mode=value or "auto")
        if value.get("type") == "allowed_tools":
            return cls(mode=value["mode"], allowed=tuple(ToolReference.from_stored(tool) for tool in value["tools"]))
        return cls(mode="required", named=ToolReference.from_stored(value))

    def to_stored(self) -> str | JsonObject:
        """The JSON the request sent (as validation normalized it): what the response echoes."""
        if self.allowed is not None:
            return {"type": "allowed_tools", "mode": self.mode, "tools": [tool.to_stored() for tool in self.allowed]}
        return self.named.to_stored() if self.named is not None else self.mode


@dataclass(frozen=True)
class Compaction:
    """A ``context_management`` entry, of the one type OpenAI defines (``compaction``):
    compact the context once the prompt passes ``compact_threshold`` tokens (None: 80% of
    the model's context; worker/generation.py)."""

    compact_threshold: int | None = None

    def to_stored(self) -> JsonObject:
        stored: JsonObject = {"type": "compaction"}
        if self.compact_threshold is not None:
            stored["compact_threshold"] = self.compact_threshold
        return stored


@dataclass(frozen=True)
class PromptReference:
    """``prompt``: a stored prompt's id, version (None: its latest) and variables."""

    id: str
    version: str | None = None
    variables: JsonObject = field(default_factory=dict)

    @classmethod
    def from_stored(cls, value: JsonObject) -> PromptReference:
        return cls(id=value["id"], version=value.get("version"), variables=value.get("variables") or {})

    def to_stored(self) -> JsonObject:
        return {"id": self.id, "version": self.version, "variables": self.variables}


@dataclass(frozen=True)
class ChatOptions:
    """What a Chat Completions request asks beyond the Responses create (chat_completions/):
    stop sequences on the answer's text, a seed, vLLM's sampling extensions, and whether
    the response is a choice of a stored completion (kept from the unstored purge). Stored
    under ``chat`` only when one is set; never echoed by a response object."""

    stored: bool = False
    stop: tuple[str, ...] = ()
    seed: int | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None

    @classmethod
    def from_stored(cls, value: JsonObject | None) -> ChatOptions:
        value = value or {}
        return cls(stored=bool(value.get("stored")), stop=tuple(value.get("stop") or ()), seed=value.get("seed"),
                   top_k=value.get("top_k"), min_p=value.get("min_p"),
                   repetition_penalty=value.get("repetition_penalty"))

    def to_stored(self) -> JsonObject:
        stored: JsonObject = {"stored": True} if self.stored else {}
        if self.stop:
            stored["stop"] = list(self.stop)
        for name in ("seed", "top_k", "min_p", "repetition_penalty"):
            if getattr(self, name) is not None:
                stored[name] = getattr(self, name)
        return stored


@dataclass(frozen=True)
class ResponseParams:
    """A create's parameters other than its input, model and delivery (stream, background,
    store): what the response object echoes and the worker runs by."""

    instructions: str | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    temperature: float | None = None  # None: the engine's default (echoed as 1.0)
    top_p: float | None = None  # None: echoed as 1.0
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    reasoning: Reasoning = field(default_factory=Reasoning)
    metadata: dict[str, str] = field(default_factory=dict)
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    parallel_tool_calls: bool = True
    text: TextOptions = field(default_factory=TextOptions)
    truncation: str = "disabled"
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    service_tier: str = "default"
    top_logprobs: int = 0
    include: list[str] = field(default_factory=list)
    client_metadata: dict[str, str] = field(default_factory=dict)
    context_management: tuple[Compaction, ...] = ()
    # Codex's inline compaction: the input ended with a compaction_trigger item.
    compaction_trigger: bool = False
    prompt: PromptReference | None = None
    chat: ChatOptions = field(default_factory=ChatOptions)

    @classmethod
    def from_stored(cls, stored: JsonObject) -> ResponseParams:
        return cls(
            instructions=stored.get("instructions"),
            max_output_tokens=stored.get("max_output_tokens"),
            max_tool_calls=stored.get("max_tool_calls"),
            temperature=stored.get("temperature"),
            top_p=stored.get("top_p"),
            presence_penalty=stored.get("presence_penalty"),
            frequency_penalty=stored.get("frequency_penalty"),
            reasoning=Reasoning.from_stored(stored.get("reasoning")),
            metadata=stored.get("metadata") or {},
            tools=tools_from_stored(stored.get("tools")),
            tool_choice=ToolChoice.from_stored(stored.get("tool_choice")),
            parallel_tool_calls=stored.get("parallel_tool_calls", True),
            text=TextOptions.from_stored(stored.get("text")),
            truncation=stored.get("truncation") or "disabled",
            user=stored.get("user"),
            safety_identifier=stored.get("safety_identifier"),
            prompt_cache_key=stored.get("prompt_cache_key"),
            prompt_cache_retention=stored.get("prompt_cache_retention"),
            service_tier=stored.get("service_tier") or "default",
            top_logprobs=stored.get("top_logprobs") or 0,
            include=stored.get("include") or [],
            client_metadata=stored.get("client_metadata") or {},
            context_management=tuple(Compaction(compact_threshold=entry.get("compact_threshold"))
                                     for entry in stored.get("context_management") or ()),
            compaction_trigger=bool(stored.get("compaction_trigger")),
            prompt=PromptReference.from_stored(stored["prompt"]) if stored.get("prompt") else None,
            chat=ChatOptions.from_stored(stored.get("chat")),
        )

    def to_stored(self) -> JsonObject:
        stored: JsonObject = {
            "instructions": self.instructions,
            "max_output_tokens": self.max_output_tokens,
            "max_tool_calls": self.max_tool_calls,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
            "reasoning": self.reasoning.to_stored(),
            "metadata": self.metadata,
            "tools": [tool.to_stored() for tool in self.tools],
            "tool_choice": self.tool_choice.to_stored(),
            "parallel_tool_calls": self.parallel_tool_calls,
            "text": self.text.to_stored(),
            "truncation": self.truncation,
            "user": self.user,
            "safety_identifier": self.safety_identifier,
            "prompt_cache_key": self.prompt_cache_key,
            "prompt_cache_retention": self.prompt_cache_retention,
            "service_tier": self.service_tier,
            "top_logprobs": self.top_logprobs,
            "include": self.include,
            "client_metadata": self.client_metadata,
            "context_management": [entry.to_stored() for entry in self.context_management] or None,
        }
        if self.compaction_trigger:
            stored["compaction_trigger"] = True
        if self.prompt is not None:
            stored["prompt"] = self.prompt.to_stored()
        if chat := self.chat.to_stored():
            stored["chat"] = chat
        return stored
