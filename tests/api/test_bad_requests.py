"""Bad requests: a 4xx in OpenAI's error shape, and nothing written (DESIGN invariant 8).

The create table goes through raw httpx (so that bodies the SDK would never send, such as
broken JSON, can be sent) with the key of a tenant of its own, whose rows are counted
before and after every request.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.conftest import http_client
from tests.helpers import assert_openai_error, tenant_row_counts

pytestmark = pytest.mark.core

TABLE_TENANT = "table-tenant"


@pytest.fixture(scope="module")
def table_key(django_db_setup, django_db_blocker) -> str:
    from responses_app.tenancy.api_keys import create_api_key

    with django_db_blocker.unblock():
        return create_api_key(TABLE_TENANT, "bad request table")[1]


@pytest.fixture
def table_http(stack, table_key) -> httpx.Client:
    with http_client(stack, table_key) as client:
        yield client


@pytest.fixture
def alice_http(stack, alice_key) -> httpx.Client:
    with http_client(stack, alice_key) as client:
        yield client


def user_message(content: Any, **extra: Any) -> list[dict[str, Any]]:
    return [{"type": "message", "role": "user", "content": content, **extra}]


def body(**fields: Any) -> dict[str, Any]:
    """A valid create body with ``fields`` changed (a value of ``...`` removes the field)."""
    base: dict[str, Any] = {"model": "echo", "input": "Hello"}
    base.update(fields)
    return {name: value for name, value in base.items() if value is not ...}


# Each in the smallest shape the SDK types: what is refused is the tool, not its shape.
REFUSED_TOOLS = [{"type": "image_generation"},
                 {"type": "computer"},
                 {"type": "computer_use_preview", "display_height": 768, "display_width": 1024,
                  "environment": "linux"}]

# (case id, request body: raw bytes or a JSON value, expected status, expected param, words the message names)
BAD_CREATES = [
    pytest.param(b'{"model": "echo", "input": ', 400, None, ["JSON"], id="truncated-json"),
    pytest.param(b"{'model': 'echo'}", 400, None, ["JSON"], id="single-quoted-json"),
    pytest.param(b"", 400, None, [], id="empty-body"),
    pytest.param(b"\xff\xfe{}", 400, None, [], id="body-not-utf8"),
    pytest.param([{"model": "echo", "input": "Hello"}], 400, None, ["object"], id="json-array-body"),
    pytest.param("Hello", 400, None, ["object"], id="json-string-body"),
    pytest.param(body(model=...), 400, "model", ["model"], id="missing-model"),
    pytest.param(body(model=None), 400, "model", ["model"], id="null-model"),
    pytest.param(body(model=4), 400, "model", ["model"], id="model-not-a-string"),
    pytest.param(body(model=""), 400, "model", ["model"], id="empty-model"),
    pytest.param(body(model="gpt-9-ultra"), 400, "model", ["gpt-9-ultra"], id="unknown-model"),
    pytest.param(body(input=42), 400, "input", ["input"], id="input-not-string-or-array"),
    pytest.param(body(input={"role": "user", "content": "x"}), 400, "input", ["input"], id="input-object"),
    pytest.param(body(input=["Hello"]), 400, "input[0]", [], id="input-item-not-an-object"),
    pytest.param(body(input=[]), 400, "input", ["input"], id="empty-input-array"),
    pytest.param(body(input=...), 400, "input", ["input"], id="missing-input"),
    pytest.param(body(input=[{"role": "wizard", "content": "x"}]), 400, "input[0].role", ["wizard"],
                 id="unknown-role"),
    pytest.param(body(input=user_message([])), 400, "input[0].content", [], id="empty-content-array"),
    pytest.param(body(input=user_message(7)), 400, "input[0].content", [], id="content-not-string-or-array"),
    pytest.param(body(input=user_message([{"type": "input_video", "text": "x"}])), 400,
                 "input[0].content[0].type", ["input_video"], id="unknown-content-part-type"),
    pytest.param(body(input=user_message([{"type": "input_image", "image_url": "https://example.com/a.png",
                                           "detail": "auto"}])),
                 400, "input[0].content[0].type", ["input_image"], id="input-image-content"),
    pytest.param(body(input=user_message([{"type": "input_file", "file_url": "https://example.com/a.pdf"}])),
                 400, "input[0].content[0].file_url", ["file_url"], id="input-file-by-url"),
    pytest.param(body(input=user_message([{"type": "input_text", "text": 3}])), 400,
                 "input[0].content[0].text", [], id="input-text-not-a-string"),
    pytest.param(body(input=[{"type": "telepathy"}]), 400, "input[0].type", ["telepathy"], id="unknown-item-type"),
    pytest.param(body(input=[{"type": "computer_call_output", "call_id": "call_1",
                              "output": {"type": "computer_screenshot"}}]), 400,
                 "input[0].type", ["computer_call_output"], id="unsupported-item-type"),
    pytest.param(body(input=[{"type": "item_reference", "id": "msg_1"}]), 404, "input[0].id", ["msg_1"],
                 id="item-reference-unknown"),
    pytest.param(body(input=[{"id": "msg_1"}]), 404, "input[0].id", ["msg_1"], id="item-reference-untyped-unknown"),
    pytest.param(body(input=[{"type": "function_call_output", "call_id": "call_1", "output": 5}]), 400,
                 "input[0].output", [], id="function-call-output-not-a-string"),
    pytest.param(body(input=[{"type": "function_call", "name": "f", "arguments": "{}"}]), 400,
                 "input[0].call_id", [], id="function-call-without-call-id"),
    pytest.param(body(input=[{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}]), 400,
                 "input[0].encrypted_content", [], id="encrypted-reasoning"),
    pytest.param(body(tools={"type": "function", "name": "f"}), 400, "tools", ["tools"], id="tools-not-an-array"),
    pytest.param(body(tools=[{"type": "teleport"}]), 400, "tools[0].type", ["teleport"], id="unknown-tool-type"),
    *[
        pytest.param(body(tools=[tool]), 400, "tools[0].type", [tool["type"]], id=f"refused-tool-{tool['type']}")
        for tool in REFUSED_TOOLS
    ],
    pytest.param(body(tools=[{"type": "code_interpreter"}]), 400, "tools[0].container", ["container"],
                 id="code-interpreter-without-container"),
    pytest.param(body(tools=[{"type": "code_interpreter", "container": {"type": "auto", "file_ids": ["file-1"]}}]),
                 404, "tools[0].container.file_ids[0]", ["file-1"], id="code-interpreter-unknown-file"),
    pytest.param(body(tools=[{"type": "code_interpreter", "container": {"type": "auto", "file_ids": "file-1"}}]),
                 400, "tools[0].container.file_ids", ["file_ids"], id="code-interpreter-file-ids-not-an-array"),
    pytest.param(body(tools=[{"type": "code_interpreter", "container": {"type": "auto"}}] * 2), 400, "tools",
                 ["code_interpreter"], id="two-code-interpreters"),
    pytest.param(body(tools=[{"type": "web_search", "search_context_size": "huge"}]), 400,
                 "tools[0].search_context_size", ["huge"], id="web-search-bad-context-size"),
    pytest.param(body(tools=[{"type": "mcp", "server_url": "http://127.0.0.1:1/mcp"}]), 400,
                 "tools[0].server_label", ["server_label"], id="mcp-without-label"),
    pytest.param(body(tools=[{"type": "mcp", "server_label": "x", "server_url": "file:///etc/passwd"}]), 400,
                 "tools[0].server_url", ["http"], id="mcp-url-not-http"),
    pytest.param(body(tools=[{"type": "mcp", "server_label": "python", "server_url": "https://example.com/mcp"}]),
                 400, "tools", ["python"], id="mcp-label-reserved"),
    pytest.param(body(tool_choice="required"), 400, "tool_choice", ["required"], id="tool-choice-required-no-tools"),
    pytest.param(body(tool_choice={"type": "function", "name": "nope"}), 400, "tool_choice.name", ["nope"],
                 id="tool-choice-unknown-function"),
    pytest.param(body(tool_choice={"type": "code_interpreter"}), 400, "tool_choice.type", ["code_interpreter"],
                 id="tool-choice-code-interpreter-not-in-tools"),
    pytest.param(body(input=[{"type": "compaction_trigger"}, {"role": "user", "content": "Hi"}]), 400,
                 "input[0].type", ["final input item"], id="compaction-trigger-not-last"),
    pytest.param(body(input=[{"type": "compaction_trigger"}]), 400, "input", ["empty"],
                 id="compaction-trigger-with-nothing-to-compact"),
    pytest.param(body(tools=[{"type": "function", "name": "f"}], tool_choice={
                     "type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "g"}]}),
                 400, "tool_choice.tools[0].name", ["g"], id="allowed-tools-names-a-tool-not-given"),
    pytest.param(body(tools=[{"type": "function", "name": "f"}], tool_choice={
                     "type": "allowed_tools", "mode": "sometimes", "tools": [{"type": "function", "name": "f"}]}),
                 400, "tool_choice.mode", ["sometimes"], id="allowed-tools-bad-mode"),
    pytest.param(body(tools=[{"type": "function", "name": "f"}], tool_choice={
                     "type": "allowed_tools", "mode": "auto", "tools": []}),
                 400, "tool_choice.tools", ["non-empty"], id="allowed-tools-empty"),
    pytest.param(body(tools=[{"type": "function", "name": "f"}], tool_choice={
                     "type": "allowed_tools", "mode": "auto", "tools": [{"type": "image_generation"}]}),
                 400, "tool_choice.tools[0].type", ["image_generation"], id="allowed-tools-unknown-type"),
    pytest.param(body(input=[{"type": "mcp_approval_response", "approval_request_id": "mcpr_x", "approve": "yes"}]),
                 400, "input[0].approve", ["approve"], id="approval-response-approve-not-boolean"),
    pytest.param(body(input=[{"type": "mcp_approval_response", "approval_request_id": "mcpr_x", "approve": True}]),
                 400, "input", ["mcpr_x"], id="approval-response-without-request"),
    pytest.param(body(tools=[{"type": "function", "name": "get weather"}]), 400, "tools[0].name",
                 ["tools[0].name"], id="function-name-with-a-space"),
    pytest.param(body(tools=[{"type": "function", "name": "f" * 65}]), 400, "tools[0].name", [],
                 id="function-name-too-long"),
    pytest.param(body(tools=[{"type": "function"}]), 400, "tools[0].name", [], id="function-without-name"),
    pytest.param(body(tools=[{"type": "function", "name": "f"}, {"type": "function", "name": "f"}]), 400,
                 "tools[1].name", ["f"], id="duplicate-function-name"),
    pytest.param(body(tools=[{"type": "function", "name": "f", "parameters": "{}"}]), 400, "tools[0].parameters",
                 [], id="function-parameters-not-an-object"),
    pytest.param(body(metadata={f"k{i}": "v" for i in range(17)}), 400, "metadata", ["16"],
                 id="metadata-17-pairs"),
    pytest.param(body(metadata={"k" * 65: "v"}), 400, "metadata", ["64"], id="metadata-key-65-chars"),
    pytest.param(body(metadata={"k": "v" * 513}), 400, "metadata.k", ["512"], id="metadata-value-513-chars"),
    pytest.param(body(metadata={"k": 1}), 400, "metadata.k", [], id="metadata-value-not-a-string"),
    pytest.param(body(metadata=["k", "v"]), 400, "metadata", [], id="metadata-not-an-object"),
    pytest.param(body(max_output_tokens=-1), 400, "max_output_tokens", [], id="negative-max-output-tokens"),
    pytest.param(body(max_output_tokens=0), 400, "max_output_tokens", [], id="zero-max-output-tokens"),
    pytest.param(body(max_output_tokens="100"), 400, "max_output_tokens", [], id="max-output-tokens-a-string"),
    pytest.param(body(max_output_tokens=10.5), 400, "max_output_tokens", [], id="max-output-tokens-a-float"),
    pytest.param(body(max_output_tokens=True), 400, "max_output_tokens", [], id="max-output-tokens-a-boolean"),
    pytest.param(body(temperature=2.5), 400, "temperature", [], id="temperature-above-2"),
    pytest.param(body(temperature=-0.1), 400, "temperature", [], id="temperature-negative"),
    pytest.param(body(temperature="hot"), 400, "temperature", [], id="temperature-a-string"),
    pytest.param(body(top_p=1.5), 400, "top_p", [], id="top-p-above-1"),
    pytest.param(body(top_p=-1), 400, "top_p", [], id="top-p-negative"),
    pytest.param(body(reasoning={"effort": "extreme"}), 400, "reasoning.effort", ["extreme"],
                 id="reasoning-effort-invalid"),
    pytest.param(body(reasoning="high"), 400, "reasoning", [], id="reasoning-not-an-object"),
    pytest.param(body(background=True, store=False), 400, "background", ["store"], id="background-without-store"),
    pytest.param(body(stream="yes"), 400, "stream", [], id="stream-not-a-boolean"),
    pytest.param(body(store="no"), 400, "store", [], id="store-not-a-boolean"),
    pytest.param(body(stream_options={"include_obfuscation": False}), 400, "stream_options", [],
                 id="stream-options-without-stream"),
    pytest.param(body(frobnicate=True), 400, "frobnicate", ["frobnicate"], id="unknown-top-level-parameter"),
    pytest.param(body(conversation="conv_1"), 404, "conversation", ["conv_1"], id="conversation-not-found"),
    pytest.param(body(conversation="conv_1", previous_response_id="resp_1"), 400, "previous_response_id",
                 ["conversation"], id="conversation-with-previous-response"),
    pytest.param(body(instructions=["be nice"]), 400, "instructions", [], id="instructions-not-a-string"),
    pytest.param(body(text={"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}}), 400,
                 "text.format.type", ["json_schema"], id="text-format-json-schema"),
    pytest.param(body(text={"format": {"type": "yaml"}}), 400, "text.format.type", [], id="text-format-unknown"),
    pytest.param(body(tool_choice="sometimes"), 400, "tool_choice", ["sometimes"], id="tool-choice-invalid"),
    pytest.param(body(tool_choice=5), 400, "tool_choice", [], id="tool-choice-a-number"),
    pytest.param(body(include=["bogus.value"]), 400, "include[0]", ["bogus.value"], id="include-bogus-value"),
    pytest.param(body(include="reasoning.encrypted_content"), 400, "include", [], id="include-not-an-array"),
    pytest.param(body(truncation="sometimes"), 400, "truncation", [], id="truncation-invalid"),
    pytest.param(body(user="u" * 257), 400, "user", [], id="user-too-long"),
    pytest.param(body(previous_response_id=7), 400, "previous_response_id", [], id="previous-response-id-a-number"),
    pytest.param(body(previous_response_id="resp_doesnotexist0000000000000000"), 404, "previous_response_id",
                 ["resp_doesnotexist0000000000000000"], id="previous-response-id-unknown"),
    # Unhashable values where the validator tests set membership.
    pytest.param(body(include=[{"value": "x"}]), 400, "include[0]", [], id="include-entry-an-object"),
    pytest.param(body(input=[{"type": ["message"]}]), 400, "input[0].type", [], id="item-type-an-array"),
    pytest.param(body(tools=[{"type": {"name": "f"}}]), 400, "tools[0].type", [], id="tool-type-an-object"),
    pytest.param(body(input=user_message("x", id=5)), 400, "input[0].id", [], id="message-id-not-a-string"),
    pytest.param(body(input=[{"type": "function_call_output", "call_id": "call_nothing", "output": "42"}]), 400,
                 "input[0].call_id", ["call_nothing"], id="function-call-output-answering-nothing"),
]


@pytest.mark.parametrize(("request_body", "status", "param", "words"), BAD_CREATES)
def test_a_bad_create_is_a_4xx_in_openai_shape_naming_the_parameter_and_writes_nothing(
        table_http, db_access, request_body, status, param, words):
    content = request_body if isinstance(request_body, bytes) else json.dumps(request_body).encode()
    before = tenant_row_counts(TABLE_TENANT)

    response = table_http.post("/responses", content=content, headers={"Content-Type": "application/json"})

    error = assert_openai_error(response, status, param)
    for word in words:
        assert word in error["message"]
    assert tenant_row_counts(TABLE_TENANT) == before


def test_the_bad_create_table_has_at_least_25_cases():
    assert len(BAD_CREATES) >= 25


def test_a_streaming_bad_create_is_a_json_error_not_an_event_stream(table_http, db_access):
    before = tenant_row_counts(TABLE_TENANT)
    response = table_http.post("/responses", json=body(stream=True, temperature=9))
    assert_openai_error(response, 400, "temperature")
    assert tenant_row_counts(TABLE_TENANT) == before


# --- bad query parameters and bad targets ---------------------------------------------------


@pytest.fixture
def finished_response(alice) -> Any:
    response = alice.responses.create(model="echo", input=[
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
    ])
    assert response.status == "completed"
    return response


@pytest.mark.parametrize(("query", "param"), [
    pytest.param({"stream": "true", "starting_after": "two"}, "starting_after", id="starting-after-not-an-integer"),
    pytest.param({"stream": "true", "starting_after": "1.5"}, "starting_after", id="starting-after-a-float"),
    pytest.param({"stream": "true", "starting_after": "-2"}, "starting_after", id="starting-after-below-minus-1"),
    pytest.param({"starting_after": "0"}, "starting_after", id="starting-after-without-stream"),
    pytest.param({"stream": "maybe"}, "stream", id="stream-not-a-boolean"),
    pytest.param({"include[]": "message.input_image.image_url"}, "include", id="include-unsupported"),
])
def test_a_bad_retrieve_query_is_400_naming_the_parameter(alice_http, finished_response, query, param):
    response = alice_http.get(f"/responses/{finished_response.id}", params=query)
    assert_openai_error(response, 400, param)


def test_starting_after_beyond_the_last_event_of_a_finished_response_is_400(alice_http, finished_response, db_access):
    from responses_app.models import Response

    last = Response.objects.get(pk=finished_response.id).last_sequence_number
    at_end = alice_http.get(f"/responses/{finished_response.id}", params={"stream": "true", "starting_after": last})
    assert at_end.status_code == 200  # the end itself is a valid (empty) resume point
    beyond = alice_http.get(f"/responses/{finished_response.id}",
                            params={"stream": "true", "starting_after": last + 1})
    error = assert_openai_error(beyond, 400, "starting_after")
    assert str(last) in error["message"]


@pytest.mark.parametrize(("query", "param"), [
    pytest.param({"limit": "0"}, "limit", id="limit-0"),
    pytest.param({"limit": "101"}, "limit", id="limit-101"),
    pytest.param({"limit": "ten"}, "limit", id="limit-not-an-integer"),
    pytest.param({"order": "sideways"}, "order", id="order-sideways"),
    pytest.param({"after": "msg_doesnotexist"}, "after", id="after-an-unknown-item"),
    pytest.param({"include[]": "message.input_image.image_url"}, "include", id="include-unsupported"),
])
def test_a_bad_input_items_query_is_400_naming_the_parameter(alice_http, finished_response, query, param):
    response = alice_http.get(f"/responses/{finished_response.id}/input_items", params=query)
    assert_openai_error(response, 400, param)


def test_input_items_limits_1_and_100_are_accepted(alice_http, finished_response):
    for limit in (1, 100):
        response = alice_http.get(f"/responses/{finished_response.id}/input_items", params={"limit": limit})
        assert response.status_code == 200
        assert len(response.json()["data"]) == min(limit, 2)


def test_cancelling_a_foreground_response_is_400_and_changes_nothing(alice, alice_http, finished_response,
                                                                      db_access):
    from responses_app.models import Response

    response = alice_http.post(f"/responses/{finished_response.id}/cancel")

    error = assert_openai_error(response, 400, "response_id")
    assert "background" in error["message"]
    row = Response.objects.get(pk=finished_response.id)
    assert (row.status, row.cancel_requested) == ("completed", False)
    assert alice.responses.retrieve(finished_response.id).to_dict() == finished_response.to_dict()


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_response_id_that_never_existed_is_404(alice_http, method):
    response = alice_http.request(method, "/responses/resp_doesnotexist0000000000000000")
    error = assert_openai_error(response, 404, "response_id")
    assert "resp_doesnotexist0000000000000000" in error["message"]


@pytest.mark.parametrize("path", ["/responses/resp_doesnotexist0000000000000000/cancel",
                                  "/responses/resp_doesnotexist0000000000000000/input_items"])
def test_cancel_and_input_items_of_an_id_that_never_existed_are_404(alice_http, path):
    response = alice_http.post(path) if path.endswith("cancel") else alice_http.get(path)
    assert_openai_error(response, 404, "response_id")


@pytest.mark.parametrize("path", ["/nonsense", "/responses/resp_x/nonsense", "/images/generations"])
def test_an_unknown_path_under_v1_is_404_in_openai_shape(alice_http, path):
    response = alice_http.post(path, json={})
    error = assert_openai_error(response, 404)
    assert path in error["message"]


def test_a_wrong_method_is_405_in_openai_shape(alice_http):
    assert_openai_error(alice_http.get("/responses"), 405)
    assert_openai_error(alice_http.put("/responses/resp_doesnotexist0000000000000000"), 405)
    assert_openai_error(alice_http.delete("/models"), 405)


def test_an_unknown_model_id_is_404_in_openai_shape(alice_http):
    error = assert_openai_error(alice_http.get("/models/gpt-9-ultra"), 404, "model")
    assert error["code"] == "model_not_found"

