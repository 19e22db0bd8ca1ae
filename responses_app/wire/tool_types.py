"""The tools a create offers the model, typed, and the API's tool vocabulary, defined once.

validation/tools.py makes these from a request's ``tools`` (and from the tools that a
``tool_search_output`` or ``additional_tools`` item loads); a Response row stores each as
``to_stored()``, the tool as the response echoes it; ``tool_from_stored`` reads a stored
tool back (a row's, an item's) into the same type, without checking it again (it was
checked at its create; only a file_search tool's filters and ranking are parsed again, by
``FileSearchTool.from_stored``). The harmony prompt and the worker's tool loop read these types,
and harmony runs without Django, so this module imports nothing of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from responses_app.wire.search_options import FileSearchTool

JsonObject = dict[str, Any]

# The type names under which the API offers web search (its aliases and dated versions).
WEB_SEARCH_TYPES = frozenset({"web_search", "web_search_preview", "web_search_preview_2025_03_11",
                              "web_search_2025_08_26"})
# The tools the client runs that the API types as items of their own: harmony/client_tools.py's
# CLIENT_TOOLS, which this module, below harmony, cannot import (a test holds the two alike).
CLIENT_SIDE_TYPES = ("shell", "local_shell", "apply_patch")
# A function name or an MCP server label: each becomes a harmony recipient, so keep it plain.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _empty_parameters() -> JsonObject:
    return {"type": "object", "properties": {}}


def _deferred(defer_loading: bool) -> JsonObject:
    """``defer_loading`` is stored only when true (harmony/tool_search.py)."""
    return {"defer_loading": True} if defer_loading else {}


@dataclass(frozen=True)
class FunctionTool:
    """A function the client runs. ``defer_loading``: kept out of the prompt until a tool
    search loads it."""

    name: str
    description: str | None = None
    parameters: JsonObject = field(default_factory=_empty_parameters)
    strict: bool = True
    defer_loading: bool = False
    type: str = field(default="function", init=False)

    @classmethod
    def from_stored(cls, stored: JsonObject) -> FunctionTool:
        strict = stored.get("strict")
        return cls(name=stored["name"], description=stored.get("description"),
                   parameters=stored.get("parameters") or _empty_parameters(),
                   strict=True if strict is None else bool(strict), defer_loading=bool(stored.get("defer_loading")))

    def to_stored(self) -> JsonObject:
        return {"type": "function", "name": self.name, "description": self.description,
                "parameters": self.parameters, "strict": self.strict, **_deferred(self.defer_loading)}


@dataclass(frozen=True)
class Grammar:
    """A custom tool's ``grammar`` format: its input must match it (enforced by vLLM)."""

    syntax: str  # "lark" or "regex"
    definition: str


@dataclass(frozen=True)
class CustomTool:
    """A tool whose input is free text, called like a function; ``grammar`` None: any text."""

    name: str
    description: str | None = None
    grammar: Grammar | None = None
    defer_loading: bool = False
    type: str = field(default="custom", init=False)

    @classmethod
    def from_stored(cls, stored: JsonObject) -> CustomTool:
        tool_format = stored.get("format") or {}
        grammar = (Grammar(tool_format["syntax"], tool_format["definition"])
                   if tool_format.get("type") == "grammar" else None)
        return cls(name=stored["name"], description=stored.get("description"), grammar=grammar,
                   defer_loading=bool(stored.get("defer_loading")))

    def format(self) -> JsonObject:
        """The ``format`` as stored and echoed."""
        if self.grammar is None:
            return {"type": "text"}
        return {"type": "grammar", "syntax": self.grammar.syntax, "definition": self.grammar.definition}

    def to_stored(self) -> JsonObject:
        return {"type": "custom", "name": self.name, "description": self.description, "format": self.format(),
                **_deferred(self.defer_loading)}


@dataclass(frozen=True)
class NamespaceTool:
    """Function tools grouped under a harmony namespace of their own."""

    name: str
    description: str
    tools: tuple[FunctionTool, ...]
    defer_loading: bool = False
    type: str = field(default="namespace", init=False)

    @classmethod
    def from_stored(cls, stored: JsonObject) -> NamespaceTool:
        return cls(name=stored["name"], description=stored.get("description") or "",
                   tools=tuple(FunctionTool.from_stored(member) for member in stored["tools"]),
                   defer_loading=bool(stored.get("defer_loading")))

    def to_stored(self) -> JsonObject:
        return {"type": "namespace", "name": self.name, "description": self.description,
                "tools": [member.to_stored() for member in self.tools], **_deferred(self.defer_loading)}


@dataclass(frozen=True)
class ClientSideTool:
    """``shell``, ``local_shell`` or ``apply_patch``: run by the client, called by the model as
    a function of the tool's type. A shell tool's ``environment`` is the client's (``local``)."""

    type: str  # one of CLIENT_SIDE_TYPES
    environment: JsonObject | None = None

    @classmethod
    def from_stored(cls, stored: JsonObject) -> ClientSideTool:
        return cls(type=stored["type"], environment=stored.get("environment"))

    def to_stored(self) -> JsonObject:
        return {"type": self.type, **({"environment": self.environment} if self.environment is not None else {})}


@dataclass(frozen=True)
class ToolSearchTool:
    """Search of the deferred tools, run by the server or by the client; a client's search
    may give the model its own description and parameters."""

    execution: str = "server"  # or "client"
    description: str | None = None
    parameters: JsonObject | None = None
    type: str = field(default="tool_search", init=False)

    @classmethod
    def from_stored(cls, stored: JsonObject) -> ToolSearchTool:
        return cls(execution=stored.get("execution") or "server", description=stored.get("description"),
                   parameters=stored.get("parameters"))

    def to_stored(self) -> JsonObject:
        stored: JsonObject = {"type": "tool_search", "execution": self.execution}
        if self.description is not None:
            stored["description"] = self.description
        if self.parameters is not None:
            stored["parameters"] = self.parameters
        return stored


@dataclass(frozen=True)
class CodeInterpreterTool:
    """The python sandbox: the container it names (``container_id``), or ``auto`` (None: the
    conversation's last one, or a new one with ``file_ids`` copied in)."""

    container_id: str | None = None
    file_ids: tuple[str, ...] = ()
    type: str = field(default="code_interpreter", init=False)

    @classmethod
    def from_stored(cls, stored: JsonObject) -> CodeInterpreterTool:
        container = stored.get("container")
        if isinstance(container, str):
            return cls(container_id=container)
        return cls(file_ids=tuple((container or {}).get("file_ids") or ()))

    def to_stored(self) -> JsonObject:
        if self.container_id is not None:
            return {"type": "code_interpreter", "container": self.container_id}
        auto: JsonObject = {"type": "auto"}
        if self.file_ids:
            auto["file_ids"] = list(self.file_ids)
        return {"type": "code_interpreter", "container": auto}


@dataclass(frozen=True)
class WebSearchTool:
    """Web search under any of its type names. ``external_web_access`` False keeps it on the
    offline index (tools_app.browser); the location and filters are echoed as sent."""

    type: str = "web_search"  # one of WEB_SEARCH_TYPES
    search_context_size: str = "medium"
    user_location: JsonObject | None = None
    filters: JsonObject | None = None
    external_web_access: bool | None = None

    @classmethod
    def from_stored(cls, stored: JsonObject) -> WebSearchTool:
        return cls(type=stored["type"], search_context_size=stored.get("search_context_size") or "medium",
                   user_location=stored.get("user_location"), filters=stored.get("filters"),
                   external_web_access=stored.get("external_web_access"))

    def to_stored(self) -> JsonObject:
        stored: JsonObject = {"type": self.type, "search_context_size": self.search_context_size}
        for name in ("user_location", "filters", "external_web_access"):
            if getattr(self, name) is not None:
                stored[name] = getattr(self, name)
        return stored


@dataclass(frozen=True)
class McpTool:
    """An MCP server: its own URL (with the request's headers and authorization), or one the
    operator registered under ``server_label``. ``allowed_tools`` None: all of its tools;
    ``require_approval`` "always", "never", ``{"always"|"never": {"tool_names": [...]}}``,
    or None ("always")."""

    server_label: str
    server_url: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    require_approval: str | JsonObject | None = None
    headers: dict[str, str] | None = None
    authorization: str | None = None
    server_description: str | None = None
    type: str = field(default="mcp", init=False)

    @classmethod
    def from_stored(cls, stored: JsonObject) -> McpTool:
        allowed = stored.get("allowed_tools")
        return cls(server_label=stored["server_label"], server_url=stored.get("server_url"),
                   allowed_tools=tuple(allowed) if allowed is not None else None,
                   require_approval=stored.get("require_approval"), headers=stored.get("headers"),
                   authorization=stored.get("authorization"), server_description=stored.get("server_description"))

    def to_stored(self) -> JsonObject:
        """The tool with its credentials: what the row stores and the MCP client reads."""
        return {"type": "mcp", "server_label": self.server_label, "server_url": self.server_url,
                "allowed_tools": list(self.allowed_tools) if self.allowed_tools is not None else None,
                "require_approval": self.require_approval, "headers": self.headers,
                "authorization": self.authorization, "server_description": self.server_description}


@dataclass(frozen=True)
class ToolReference:
    """A tool as a ``tool_choice`` names it: its type, and its name (a function, a custom
    tool, a namespace, an MCP server's tool) or its MCP server's label."""

    type: str
    name: str | None = None
    server_label: str | None = None

    @classmethod
    def from_stored(cls, stored: JsonObject) -> ToolReference:
        return cls(type=stored["type"], name=stored.get("name"), server_label=stored.get("server_label"))

    def to_stored(self) -> JsonObject:
        stored: JsonObject = {"type": self.type}
        if self.server_label is not None:
            stored["server_label"] = self.server_label
        if self.name is not None:
            stored["name"] = self.name
        return stored

    @property
    def function_name(self) -> str | None:
        """The function of harmony's ``functions`` it names (a client-side tool's is its type)."""
        if self.type in ("function", "custom"):
            return self.name
        return self.type if self.type in CLIENT_SIDE_TYPES else None


Tool = (FunctionTool | CustomTool | NamespaceTool | ClientSideTool | ToolSearchTool | CodeInterpreterTool
        | WebSearchTool | FileSearchTool | McpTool)
# The tools that a tool search or an additional_tools item declares where it stands.
LoadedTool = FunctionTool | CustomTool | NamespaceTool


def tool_from_stored(stored: JsonObject) -> Tool:
    """A tool as a row or an item stores it (``to_stored``), typed."""
    kind = stored["type"]
    if kind in CLIENT_SIDE_TYPES:
        return ClientSideTool.from_stored(stored)
    if kind in WEB_SEARCH_TYPES:
        return WebSearchTool.from_stored(stored)
    if kind == "file_search":
        return FileSearchTool.from_stored(stored)
    reader = _READERS.get(kind)
    if reader is None:
        raise ValueError(f"A stored tool of an unknown type {kind!r}.")
    return reader(stored)


def tools_from_stored(stored: Iterable[JsonObject] | None) -> tuple[Tool, ...]:
    return tuple(tool_from_stored(tool) for tool in stored or ())


def loaded_tools_from_stored(stored: Iterable[JsonObject] | None) -> tuple[LoadedTool, ...]:
    """The tools a tool_search_output or additional_tools item stores (validation refuses
    any other kind there)."""
    loaded = tools_from_stored(stored)
    return tuple(tool for tool in loaded if isinstance(tool, (FunctionTool, CustomTool, NamespaceTool)))


def public_tool(tool: Tool) -> JsonObject:
    """A tool as the response echoes it: an MCP tool's credentials stay on the server."""
    stored = tool.to_stored()
    if isinstance(tool, McpTool):
        del stored["headers"], stored["authorization"]
    return stored


def function_name(tool: Tool) -> str | None:
    """The name the model calls a tool by in harmony's ``functions`` namespace (a client-side
    tool's and a tool search's is its type), or None for a tool it calls otherwise."""
    if isinstance(tool, (ClientSideTool, ToolSearchTool)):
        return tool.type
    if isinstance(tool, (FunctionTool, CustomTool)):
        return tool.name
    return None


def tool_reference(tool: Tool) -> ToolReference:
    """The tool as a ``tool_choice`` names it."""
    if isinstance(tool, (FunctionTool, CustomTool, NamespaceTool)):
        return ToolReference(tool.type, name=tool.name)
    if isinstance(tool, McpTool):
        return ToolReference("mcp", server_label=tool.server_label)
    return ToolReference(tool.type)


def is_deferred(tool: Tool) -> bool:
    """Whether the tool stays out of the prompt until a tool search loads it."""
    return isinstance(tool, (FunctionTool, CustomTool, NamespaceTool)) and tool.defer_loading


_READERS: dict[str, Callable[[JsonObject], Tool]] = {
    "function": FunctionTool.from_stored,
    "custom": CustomTool.from_stored,
    "namespace": NamespaceTool.from_stored,
    "tool_search": ToolSearchTool.from_stored,
    "code_interpreter": CodeInterpreterTool.from_stored,
    "mcp": McpTool.from_stored,
}
