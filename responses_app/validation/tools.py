"""Validation of a create request's ``tools`` and ``tool_choice``, and of the tool items a
client may send back (``mcp_approval_response``). Their structure is checked already
(validation/sdk_types); this module checks what this server can run.

Function and custom tools (alone or grouped in a ``namespace``) and the shell, local_shell
and apply_patch tools run on the client; code_interpreter, mcp and web_search run in the
worker's tool loop; tool_search runs in either (harmony/tool_search.py). Tool types this
server does not run are refused by name with a 400.
"""

from __future__ import annotations

from typing import Any

from responses_app.files.requests import file_ids_field
from responses_app.harmony.client_tools import CLIENT_TOOLS
from responses_app.harmony.tool_search import TOOL_NAME as SEARCH_TOOL
from responses_app.harmony.tool_search import search_tool
from responses_app.lib.ids import new_id
from responses_app.models.response_params import ToolChoice
from responses_app.validation.json_schema import check_grammar
from responses_app.validation.mcp_tool import validate_mcp_tool
from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.search_options import FileSearchTool
from responses_app.wire.tool_types import (
    NAME_PATTERN,
    WEB_SEARCH_TYPES,
    ClientSideTool,
    CodeInterpreterTool,
    CustomTool,
    FunctionTool,
    Grammar,
    LoadedTool,
    McpTool,
    NamespaceTool,
    Tool,
    ToolReference,
    ToolSearchTool,
    WebSearchTool,
    is_deferred,
)

# Harmony namespaces that tools of other kinds own: no namespace tool or MCP server may take them.
RESERVED_NAMESPACES = frozenset({"functions", "python", "browser", "container", "file_search"})


# --- tools -------------------------------------------------------------------------------------


def validate_tools(value: Any, constrains: bool = False, param: str = "tools") -> tuple[Tool, ...]:
    """The request's tools, typed. ``constrains``: the model's engine enforces grammars
    (vLLM), which a custom tool's ``grammar`` format needs. ``param``: where the tools are
    (a tool_search_output's ``tools`` are the tools it loaded)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise invalid_type(param, "an array", value)
    tools: list[Tool] = []
    function_names: set[str] = set()
    namespaces: set[str] = set()
    where = param
    for index, tool in enumerate(value):
        param = f"{where}[{index}]"
        tools.append(_tool(tool, param, constrains, function_names, namespaces))
    for singleton in ("code_interpreter", "web_search", "file_search"):
        if sum(1 for tool in tools if _family(tool.type) == singleton) > 1:
            raise InvalidRequest(f"At most one {singleton} tool may be given.", param=where)
    # Namespaces and MCP labels name harmony namespaces beside the built-in ones.
    for name in namespaces & RESERVED_NAMESPACES:
        raise InvalidRequest(f"The namespace '{name}' is reserved.", param=where)
    return tuple(tools)


def _tool(tool: dict[str, Any], param: str, constrains: bool, function_names: set[str],
          namespaces: set[str]) -> Tool:
    """One tool, typed; its name added to the function names or the namespaces it takes."""
    tool_type = tool["type"]
    if tool_type == "tool_search":
        search = _tool_search_tool(tool, param)
        _unique(SEARCH_TOOL, function_names, f"Duplicate tool '{SEARCH_TOOL}' (or a function of that name).",
                f"{param}.type")
        return search
    if tool_type in ("function", "custom"):
        typed: FunctionTool | CustomTool = (function_tool(tool, param) if tool_type == "function"
                                            else _custom_tool(tool, param, constrains))
        _unique(typed.name, function_names, f"Duplicate function name '{typed.name}'.", f"{param}.name")
        return typed
    if tool_type in CLIENT_TOOLS:
        client_tool = _client_tool(tool, param)
        # The model calls it as a function of this name.
        _unique(tool_type, function_names, f"Duplicate tool '{tool_type}' (or a function of that name).",
                f"{param}.type")
        return client_tool
    if tool_type == "namespace":
        namespace = _namespace_tool(tool, param)
        _unique(namespace.name, namespaces, f"Duplicate namespace '{namespace.name}'.", f"{param}.name")
        return namespace
    if tool_type == "mcp":
        server = validate_mcp_tool(tool, param)
        _unique(server.server_label, namespaces, f"Duplicate namespace or MCP server_label "
                f"'{server.server_label}'.", f"{param}.server_label")
        return server
    if tool_type == "code_interpreter":
        return _code_interpreter_tool(tool, param)
    if tool_type in WEB_SEARCH_TYPES:
        return _web_search_tool(tool)
    if tool_type == "file_search":
        return FileSearchTool.parse(tool, param)  # its stores are checked for the tenant at create (services/create.py)
    raise InvalidRequest(f"Tool type '{tool_type}' is not supported by this server yet.",
                         param=f"{param}.type", code="unsupported_tool_type")


def check_deferred_tools(tools: tuple[Tool, ...]) -> None:
    """Tools deferred with ``defer_loading`` reach the model only through a tool search."""
    if search_tool(tools) is not None:
        return
    for index, tool in enumerate(tools):
        members = tool.tools if isinstance(tool, NamespaceTool) else ()
        if is_deferred(tool) or any(is_deferred(member) for member in members):
            raise InvalidRequest("A tool with defer_loading is offered to the model only through tool search: "
                                 "add a tool of type 'tool_search'.", param=f"tools[{index}]")


def _family(tool_type: str) -> str:
    return "web_search" if tool_type in WEB_SEARCH_TYPES else tool_type


def _unique(name: str, seen: set[str], message: str, param: str) -> None:
    if name in seen:
        raise InvalidRequest(message, param=param)
    seen.add(name)


def _known_keys(tool: dict[str, Any], param: str, keys: tuple[str, ...]) -> None:
    for key in tool:
        if key not in keys:
            raise InvalidRequest(f"Unknown parameter: '{param}.{key}'.", param=f"{param}.{key}",
                                 code="unknown_parameter")


def checked_name(name: str, param: str) -> str:
    """A name the model calls by (a function, a namespace, a custom tool, a format)."""
    if not NAME_PATTERN.match(name):
        raise InvalidRequest(f"'{param}' must match ^[a-zA-Z0-9_-]{{1,64}}$.", param=param)
    return name


def function_tool(tool: dict[str, Any], param: str) -> FunctionTool:
    """A function tool as stored and echoed: ``allowed_callers`` and ``output_schema`` serve
    OpenAI's programmatic calling, which this server does not run; ``defer_loading`` keeps
    the function out of the prompt until a tool search loads it."""
    name = checked_name(tool["name"], f"{param}.name")
    description = tool.get("description")
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise invalid_type(f"{param}.parameters", "an object", parameters)
    strict = tool.get("strict")
    return FunctionTool(name=name, description=description,
                        parameters=parameters or {"type": "object", "properties": {}},
                        strict=True if strict is None else strict, defer_loading=bool(tool.get("defer_loading")))


def _custom_tool(tool: dict[str, Any], param: str, constrains: bool) -> CustomTool:
    """A tool whose input is free text: called in harmony's ``functions`` namespace like a
    function, answered as a ``custom_tool_call``; a ``grammar`` format is enforced on the
    call's input by vLLM's structured outputs (worker/step_router.py)."""
    name = checked_name(tool["name"], f"{param}.name")
    tool_format = tool.get("format") or {"type": "text"}
    grammar = None
    if tool_format["type"] == "grammar":
        if not constrains:
            raise InvalidRequest("This model cannot enforce a grammar on a custom tool's input (the echo engine "
                                 "constrains nothing).", param=f"{param}.format")
        check_grammar(tool_format["syntax"], tool_format["definition"], f"{param}.format.definition")
        grammar = Grammar(tool_format["syntax"], tool_format["definition"])
    return CustomTool(name=name, description=tool.get("description"), grammar=grammar,
                      defer_loading=bool(tool.get("defer_loading")))


def _client_tool(tool: dict[str, Any], param: str) -> ClientSideTool:
    """shell, local_shell or apply_patch, run by the client (worker/tools/client_calls.py). A shell
    tool's ``environment`` may be the client's (``local``); OpenAI's hosted containers are
    not this server's to run."""
    environment = tool.get("environment")
    if environment is not None and environment["type"] != "local":
        raise InvalidRequest(f"The shell tool runs on the client here: environment type '{environment['type']}' "
                             "(a hosted container) is not supported; use 'local' or leave it out.",
                             param=f"{param}.environment.type")
    return ClientSideTool(type=tool["type"], environment=environment)


def _namespace_tool(tool: dict[str, Any], param: str) -> NamespaceTool:
    """A group of function tools: a harmony namespace of its own, whose calls come back as
    ``function_call`` items that name it in ``namespace``."""
    name = checked_name(tool["name"], f"{param}.name")
    functions: list[FunctionTool] = []
    names: set[str] = set()
    for index, member in enumerate(tool.get("tools") or []):
        if member["type"] != "function":
            raise InvalidRequest(f"A namespace's tools of type '{member['type']}' are not supported by this server "
                                 "yet; give them at the top level.", param=f"{param}.tools[{index}].type",
                                 code="unsupported_tool_type")
        member = function_tool(member, f"{param}.tools[{index}]")
        _unique(member.name, names, f"Duplicate function name '{member.name}' in namespace '{name}'.",
                f"{param}.tools[{index}].name")
        functions.append(member)
    if not functions:
        raise InvalidRequest(f"The namespace '{name}' has no tools.", param=f"{param}.tools")
    return NamespaceTool(name=name, description=tool["description"], tools=tuple(functions),
                         defer_loading=bool(tool.get("defer_loading")))


def _tool_search_tool(tool: dict[str, Any], param: str) -> ToolSearchTool:
    """Search of the deferred tools: run by the server (the default) or by the client, which
    may give the model its own description and parameters of the search (the AI SDK says
    they are "only used for client-executed tool search": a server search ignores them)."""
    _known_keys(tool, param, ("type", "execution", "description", "parameters"))
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise invalid_type(f"{param}.parameters", "an object", parameters)
    execution = tool.get("execution") or "server"
    if execution != "client":  # a server-side search is the server's: its description stays
        return ToolSearchTool(execution=execution)
    return ToolSearchTool(execution=execution, description=tool.get("description"), parameters=parameters)


def _code_interpreter_tool(tool: dict[str, Any], param: str) -> CodeInterpreterTool:
    _known_keys(tool, param, ("type", "container"))
    container = tool.get("container")
    if isinstance(container, str):
        if not container.startswith("cntr_"):
            raise InvalidRequest(f"Invalid container id '{container}'.", param=f"{param}.container")
        return CodeInterpreterTool(container_id=container)
    if not isinstance(container, dict):
        raise InvalidRequest(f"Missing required parameter: '{param}.container' (a container id or "
                             "{'type': 'auto'}).", param=f"{param}.container", code="missing_required_parameter")
    _known_keys(container, f"{param}.container", ("type", "file_ids", "memory_limit"))
    if container.get("type") != "auto":
        raise InvalidRequest(f"Invalid value for '{param}.container.type': {container.get('type')!r}; "
                             "use 'auto'.", param=f"{param}.container.type", code="invalid_value")
    if container.get("memory_limit") not in (None, "1g"):
        raise InvalidRequest("container.memory_limit is set by the operator (SANDBOX_MEMORY_MB) on this server.",
                             param=f"{param}.container.memory_limit")
    # file_ids are copied into the container it makes (worker/tools/toolbox.py).
    file_ids = file_ids_field(container["file_ids"], f"{param}.container.file_ids") if container.get("file_ids") else []
    return CodeInterpreterTool(file_ids=tuple(file_ids))


def _web_search_tool(tool: dict[str, Any]) -> WebSearchTool:
    """``external_web_access: false`` keeps the search on the offline index (tools_app)."""
    return WebSearchTool(type=tool["type"], search_context_size=tool.get("search_context_size") or "medium",
                         user_location=tool.get("user_location"), filters=tool.get("filters"),
                         external_web_access=tool.get("external_web_access"))


# --- tool_choice --------------------------------------------------------------------------------


def validate_tool_choice(value: Any, tools: tuple[Tool, ...]) -> ToolChoice:
    """``auto`` / ``none`` / ``required``, a named tool that must be among ``tools``, or
    ``allowed_tools``: the tools the model may call, each among ``tools``."""
    if value in ("auto", "none"):
        return ToolChoice(mode=value)
    if value == "required":
        if not tools:
            raise InvalidRequest("tool_choice 'required' needs at least one tool.", param="tool_choice")
        return ToolChoice(mode=value)
    if not isinstance(value, dict):
        raise InvalidRequest(f"Invalid value for 'tool_choice': {value!r}.", param="tool_choice",
                             code="invalid_value")
    if value.get("type") == "allowed_tools":
        return _allowed_tools(value, tools)
    return ToolChoice(mode="required", named=_tool_reference(value, tools, "tool_choice"))


def _allowed_tools(value: dict[str, Any], tools: tuple[Tool, ...]) -> ToolChoice:
    mode = value.get("mode")
    if mode not in ("auto", "required"):
        raise InvalidRequest(f"Invalid value for 'tool_choice.mode': {mode!r}; expected 'auto' or 'required'.",
                             param="tool_choice.mode", code="invalid_value")
    references = value.get("tools")
    if not isinstance(references, list) or not references:
        raise invalid_type("tool_choice.tools", "a non-empty array of tools", references)
    allowed = []
    for index, reference in enumerate(references):
        param = f"tool_choice.tools[{index}]"
        if not isinstance(reference, dict):
            raise invalid_type(param, "an object", reference)
        allowed.append(_tool_reference(reference, tools, param, namespaces=True))
    return ToolChoice(mode=mode, allowed=tuple(allowed))


def _tool_reference(value: dict[str, Any], tools: tuple[Tool, ...], param: str,
                    namespaces: bool = False) -> ToolReference:
    """A tool of ``tools`` named by type (and name or server_label), as tool_choice names one."""
    choice_type = value.get("type")
    if choice_type in ("function", "custom"):
        name = value.get("name")
        if not any(isinstance(tool, (FunctionTool, CustomTool)) and tool.type == choice_type and tool.name == name
                   for tool in tools):
            raise InvalidRequest(f"{param} names the {choice_type} tool {name!r}, which is not in 'tools'.",
                                 param=f"{param}.name")
        return ToolReference(choice_type, name=name)
    if choice_type == "namespace" and namespaces:
        name = value.get("name")
        if not any(isinstance(tool, NamespaceTool) and tool.name == name for tool in tools):
            raise InvalidRequest(f"{param} names the namespace {name!r}, which is not in 'tools'.",
                                 param=f"{param}.name")
        return ToolReference("namespace", name=name)
    if choice_type == "mcp":
        label, name = value.get("server_label"), value.get("name")
        if not any(isinstance(tool, McpTool) and tool.server_label == label for tool in tools):
            raise InvalidRequest(f"{param} names the MCP server {label!r}, which is not in 'tools'.",
                                 param=f"{param}.server_label")
        if name is not None and not isinstance(name, str):
            raise invalid_type(f"{param}.name", "a string", name)
        return ToolReference("mcp", server_label=label, name=name or None)
    if choice_type in ("shell", "apply_patch"):
        if not any(tool.type == choice_type for tool in tools):
            raise InvalidRequest(f"{param} names {choice_type!r}, which is not in 'tools'.", param=f"{param}.type")
        return ToolReference(choice_type)
    if choice_type in ("code_interpreter", "file_search", *WEB_SEARCH_TYPES):
        if not any(_family(tool.type) == _family(choice_type) for tool in tools):
            raise InvalidRequest(f"{param} names {choice_type!r}, which is not in 'tools'.", param=f"{param}.type")
        return ToolReference(choice_type)
    raise InvalidRequest(f"Invalid value for '{param}.type': {choice_type!r}.", param=f"{param}.type",
                         code="invalid_value")


# --- tool items a client sends ------------------------------------------------------------------


def loaded_tools(value: Any, param: str, constrains: bool) -> tuple[LoadedTool, ...]:
    """The tools a tool_search_output or an additional_tools item declares to the model
    where it stands: functions, custom tools and namespaces (the server's own tools are
    given in the request's ``tools``)."""
    loaded: list[LoadedTool] = []
    for index, tool in enumerate(validate_tools(value, constrains, param=param)):
        if not isinstance(tool, (FunctionTool, CustomTool, NamespaceTool)):
            raise InvalidRequest(f"Tools added during a conversation are function, custom and namespace tools, "
                                 f"not '{tool.type}'; give it in the request's tools.",
                                 param=f"{param}[{index}].type")
        loaded.append(tool)
    return tuple(loaded)


def tool_search_item(item: dict[str, Any], param: str, constrains: bool) -> dict[str, Any]:
    """A tool search's call or output (without its id), sent back as input (a client's
    search, or the items a server-side one made): an output's ``tools`` are the tools it loaded."""
    execution = item.get("execution") or "client"
    call_id = item.get("call_id")
    if call_id is not None and not isinstance(call_id, str):
        raise invalid_type(f"{param}.call_id", "a string", call_id)
    common = {"type": item["type"], "call_id": call_id, "execution": execution, "status": "completed"}
    if item["type"] == "tool_search_call":
        arguments = item.get("arguments")
        if not isinstance(arguments, dict):
            raise invalid_type(f"{param}.arguments", "an object", arguments)
        return {**common, "arguments": arguments}
    loaded = loaded_tools(item.get("tools"), f"{param}.tools", constrains)
    return {**common, "tools": [tool.to_stored() for tool in loaded]}



def approval_response_item(item: dict[str, Any], param: str) -> dict[str, Any]:
    _known_keys(item, param, ("type", "id", "approval_request_id", "approve", "reason"))
    request_id = item.get("approval_request_id")
    if not isinstance(request_id, str) or not request_id:
        raise invalid_type(f"{param}.approval_request_id", "a non-empty string", request_id)
    approve = item.get("approve")
    if not isinstance(approve, bool):
        raise invalid_type(f"{param}.approve", "a boolean", approve)
    reason = item.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise invalid_type(f"{param}.reason", "a string", reason)
    item_id = item.get("id")
    if item_id is not None and not isinstance(item_id, str):
        raise invalid_type(f"{param}.id", "a string", item_id)
    return {"type": "mcp_approval_response", "id": item_id or new_id("mcpr"), "approval_request_id": request_id,
            "approve": approve, **({"reason": reason} if reason else {})}
