"""The tools a create offers, typed: parsed from a request, stored as JSON, read back from
rows and items of any age into the same types."""

from __future__ import annotations

import pytest

from responses_app.harmony.client_tools import CLIENT_TOOLS
from responses_app.validation.tools import validate_tools
from responses_app.wire.search_options import Comparison, FileSearchTool
from responses_app.wire.tool_types import (
    CLIENT_SIDE_TYPES,
    ClientSideTool,
    CodeInterpreterTool,
    CustomTool,
    FunctionTool,
    Grammar,
    McpTool,
    NamespaceTool,
    ToolReference,
    ToolSearchTool,
    WebSearchTool,
    function_name,
    is_deferred,
    loaded_tools_from_stored,
    public_tool,
    tool_from_stored,
    tool_reference,
    tools_from_stored,
)

pytestmark = pytest.mark.core

WEATHER = {"type": "function", "name": "get_weather", "description": "Weather of a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": True}
# Each kind as the code before the types stored it in a row (validation/tools.py at 42d0f8d).
STORED_BEFORE_TYPES = [
    WEATHER,
    {"type": "function", "name": "later", "description": None, "parameters": {"type": "object", "properties": {}},
     "strict": False, "defer_loading": True},
    {"type": "custom", "name": "patch", "description": None,
     "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "x"'}},
    {"type": "custom", "name": "note", "description": "Free text.", "format": {"type": "text"}},
    {"type": "namespace", "name": "crm", "description": "The CRM.", "tools": [{**WEATHER, "name": "find"}],
     "defer_loading": True},
    {"type": "shell", "environment": {"type": "local"}},
    {"type": "apply_patch"},
    {"type": "tool_search", "execution": "client", "description": "Find tools.",
     "parameters": {"type": "object", "properties": {"goal": {"type": "string"}}}},
    {"type": "code_interpreter", "container": {"type": "auto", "file_ids": ["file-abc"]}},
    {"type": "web_search_preview", "search_context_size": "low",
     "user_location": {"type": "approximate", "city": "Oslo"}, "external_web_access": False},
    {"type": "file_search", "vector_store_ids": ["vs_1"], "filters": {"type": "eq", "key": "lang", "value": "en"},
     "max_num_results": 4},
    {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.com/mcp", "allowed_tools": ["search"],
     "require_approval": "never", "headers": {"X-Key": "k"}, "authorization": "tok", "server_description": "Docs"},
]


def test_a_row_stored_before_the_types_loads_into_them_and_is_stored_again_the_same():
    tools = tools_from_stored(STORED_BEFORE_TYPES)
    assert [type(tool) for tool in tools] == [
        FunctionTool, FunctionTool, CustomTool, CustomTool, NamespaceTool, ClientSideTool, ClientSideTool,
        ToolSearchTool, CodeInterpreterTool, WebSearchTool, FileSearchTool, McpTool]
    assert [tool.to_stored() for tool in tools] == STORED_BEFORE_TYPES


def test_each_kind_reads_its_fields_typed():
    tools = tools_from_stored(STORED_BEFORE_TYPES)
    assert tools[1] == FunctionTool(name="later", strict=False, defer_loading=True)
    assert tools[2].grammar == Grammar(syntax="lark", definition='start: "x"')
    assert tools[4] == NamespaceTool(name="crm", description="The CRM.", defer_loading=True,
                                     tools=(FunctionTool.from_stored({**WEATHER, "name": "find"}),))
    assert tools[8] == CodeInterpreterTool(file_ids=("file-abc",))
    assert tools[10].filter == Comparison("lang", "eq", "en")
    assert tools[10].max_num_results == 4
    assert tools[11].allowed_tools == ("search",)
    assert tool_from_stored({"type": "code_interpreter", "container": "cntr_1"}) == CodeInterpreterTool(
        container_id="cntr_1")


def test_the_request_parses_into_the_same_tools_the_row_reads_back():
    assert validate_tools(STORED_BEFORE_TYPES, constrains=True) == tools_from_stored(STORED_BEFORE_TYPES)


def test_what_the_request_leaves_out_is_stored_as_the_api_echoes_it():
    sent = [{"type": "function", "name": "f"}, {"type": "tool_search"}, {"type": "web_search"},
            {"type": "code_interpreter", "container": {"type": "auto"}}, {"type": "mcp", "server_label": "docs"}]
    assert [tool.to_stored() for tool in validate_tools(sent)] == [
        {"type": "function", "name": "f", "description": None, "parameters": {"type": "object", "properties": {}},
         "strict": True},
        {"type": "tool_search", "execution": "server"},
        {"type": "web_search", "search_context_size": "medium"},
        {"type": "code_interpreter", "container": {"type": "auto"}},
        {"type": "mcp", "server_label": "docs", "server_url": None, "allowed_tools": None, "require_approval": None,
         "headers": None, "authorization": None, "server_description": None},
    ]


def test_a_server_side_search_keeps_its_own_description():
    tool = validate_tools([{"type": "tool_search", "description": "Mine.", "parameters": {"type": "object"}}])[0]
    assert tool == ToolSearchTool(execution="server")


def test_the_echoed_mcp_tool_keeps_its_credentials_on_the_server():
    mcp = tool_from_stored(STORED_BEFORE_TYPES[-1])
    assert "headers" not in public_tool(mcp) and "authorization" not in public_tool(mcp)
    assert public_tool(mcp)["server_url"] == "https://mcp.example.com/mcp"
    assert public_tool(tool_from_stored(WEATHER)) == WEATHER


def test_an_item_loads_its_function_custom_and_namespace_tools():
    loaded = loaded_tools_from_stored(STORED_BEFORE_TYPES[:5])
    assert [tool.name for tool in loaded] == ["get_weather", "later", "patch", "note", "crm"]
    assert loaded_tools_from_stored(None) == ()


def test_names_references_and_deferral():
    tools = tools_from_stored(STORED_BEFORE_TYPES)
    assert [function_name(tool) for tool in tools] == [
        "get_weather", "later", "patch", "note", None, "shell", "apply_patch", "tool_search", None, None, None, None]
    assert [is_deferred(tool) for tool in tools[:5]] == [False, True, False, False, True]
    assert [tool_reference(tool).to_stored() for tool in (tools[0], tools[4], tools[9], tools[11])] == [
        {"type": "function", "name": "get_weather"}, {"type": "namespace", "name": "crm"},
        {"type": "web_search_preview"}, {"type": "mcp", "server_label": "docs"}]


def test_a_stored_tool_of_an_unknown_type_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="teleport"):
        tool_from_stored({"type": "teleport"})


def test_a_reference_names_the_function_harmony_calls():
    assert [ToolReference(kind, name="f").function_name for kind in ("function", "custom", "namespace", "mcp")] == [
        "f", "f", None, None]
    assert ToolReference("apply_patch").function_name == "apply_patch"
    assert ToolReference("web_search").function_name is None


def test_the_client_side_types_are_the_client_tools_harmony_describes():
    assert set(CLIENT_SIDE_TYPES) == set(CLIENT_TOOLS)
