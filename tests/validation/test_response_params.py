"""A create's parameters, typed: parsed once, stored as JSON, read back by the worker and
the echoed response, from rows of any age."""

from __future__ import annotations

import pytest

from responses_app.models import Response
from responses_app.models.response_params import (
    Compaction,
    PromptReference,
    Reasoning,
    ResponseParams,
    TextFormat,
    TextOptions,
    ToolChoice,
)
from responses_app.validation.create import parse_create_request
from responses_app.wire.tool_types import ToolReference

# A row as the code before ResponseParams stored it (validation/create.py at c5b0f22).
STORED_BEFORE_TYPES = {
    "instructions": "Be brief.", "max_output_tokens": 64, "max_tool_calls": None, "temperature": 0.2,
    "top_p": None, "presence_penalty": None, "frequency_penalty": 0.5,
    "reasoning": {"effort": "low", "summary": "auto"}, "metadata": {"ticket": "T-1"},
    "tools": [{"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}},
               "strict": False, "description": None}],
    "tool_choice": {"type": "function", "name": "lookup"}, "parallel_tool_calls": False,
    "text": {"format": {"type": "text"}, "verbosity": "low"}, "truncation": "auto", "user": None,
    "safety_identifier": "u-1", "prompt_cache_key": "k", "prompt_cache_retention": None, "service_tier": "default",
    "top_logprobs": 3, "include": ["message.output_text.logprobs"], "client_metadata": {},
    "context_management": [{"type": "compaction", "compact_threshold": 1000}], "compaction_trigger": True,
    "prompt": {"id": "pmpt_1", "version": "2", "variables": {"city": "Oslo"}},
}


def test_a_row_stored_before_the_types_loads_into_them_and_is_stored_again_the_same():
    params = ResponseParams.from_stored(STORED_BEFORE_TYPES)
    assert params.reasoning == Reasoning(effort="low", summary="auto")
    assert params.text == TextOptions(format=TextFormat(), verbosity="low")
    assert params.prompt == PromptReference(id="pmpt_1", version="2", variables={"city": "Oslo"})
    assert params.tool_choice == ToolChoice(mode="required", named=ToolReference("function", name="lookup"))
    assert params.context_management == (Compaction(compact_threshold=1000),)
    assert (params.max_output_tokens, params.temperature, params.top_logprobs, params.compaction_trigger) == (
        64, 0.2, 3, True)
    assert params.to_stored() == STORED_BEFORE_TYPES


def test_a_row_from_before_a_field_existed_reads_it_as_the_api_documents_it():
    params = ResponseParams.from_stored({"instructions": None, "tools": [], "metadata": {}})
    assert params == ResponseParams()
    assert (params.tool_choice, params.parallel_tool_calls, params.truncation, params.service_tier) == (
        ToolChoice(mode="auto"), True, "disabled", "default")
    assert (params.reasoning.summary, params.text.format, params.include, params.prompt) == (
        None, TextFormat(type="text"), [], None)


@pytest.mark.parametrize("body", [
    {"model": "echo", "input": "Hi"},
    {"model": "echo", "input": "Hi", "reasoning": {"effort": "high", "summary": "detailed"}, "temperature": 0.7,
     "text": {"verbosity": "high"}, "metadata": {"a": "b"}, "include": ["reasoning.encrypted_content"],
     "max_output_tokens": 20, "prompt_cache_key": "conv-1", "truncation": "auto"},
])
def test_a_parsed_create_is_stored_and_read_back_unchanged(body):
    params = parse_create_request(body).params
    assert ResponseParams.from_stored(params.to_stored()) == params


@pytest.mark.parametrize(("sent", "mode", "named", "allowed"), [
    ("auto", "auto", None, None),
    ("none", "none", None, None),
    ("required", "required", None, None),
    ({"type": "function", "name": "f"}, "required", ToolReference("function", name="f"), None),
    ({"type": "mcp", "server_label": "docs"}, "required", ToolReference("mcp", server_label="docs"), None),
    ({"type": "mcp", "server_label": "docs", "name": "search"}, "required",
     ToolReference("mcp", name="search", server_label="docs"), None),
    ({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "f"}]},
     "auto", None, (ToolReference("function", name="f"),)),
])
def test_a_tool_choice_reads_as_its_mode_and_tools_and_is_stored_as_sent(sent, mode, named, allowed):
    choice = ToolChoice.from_stored(sent)
    assert (choice.mode, choice.named, choice.allowed) == (mode, named, allowed)
    assert choice.to_stored() == sent


@pytest.mark.parametrize("sent", [
    {"type": "text"},
    {"type": "json_object"},
    {"type": "json_schema", "name": "city", "schema": {"type": "object"}, "strict": True},
    {"type": "json_schema", "name": "city", "schema": {"type": "object"}, "strict": False, "description": "A city."},
])
def test_a_text_format_is_stored_as_validation_normalized_it(sent):
    text_format = TextFormat.from_stored(sent)
    assert text_format.constrained == (sent["type"] != "text")
    assert text_format.to_stored() == sent


def test_a_rows_params_are_typed_once_and_again_when_its_request_is_replaced():
    response = Response(request=STORED_BEFORE_TYPES)
    assert response.params is response.params
    response.request = {**STORED_BEFORE_TYPES, "instructions": "Be long."}
    assert response.params.instructions == "Be long."
