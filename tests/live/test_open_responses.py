"""The Open Responses specification's shapes (openresponses.org): the Response object's
required fields in every event and in GET, and its names for the reasoning events, which
a key asks for (ApiKey.event_names) without changing what the OpenAI SDKs get."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.conftest import sdk_client
from tests.helpers import new_key, new_tenant, read_until, reasoning_and_answer

pytestmark = pytest.mark.core

# Every key of the specification's ResponseResource is required, null or not.
REQUIRED_RESPONSE_FIELDS = {
    "id", "object", "created_at", "completed_at", "status", "incomplete_details", "model", "previous_response_id",
    "instructions", "output", "error", "tools", "tool_choice", "truncation", "parallel_tool_calls", "text", "top_p",
    "presence_penalty", "frequency_penalty", "top_logprobs", "temperature", "reasoning", "usage",
    "max_output_tokens", "max_tool_calls", "store", "background", "service_tier", "metadata",
    "safety_identifier", "prompt_cache_key",
}
# The text holds the event names themselves: renaming must not touch what the model wrote.
TRICKY = 'I saw "type":"response.reasoning_text.delta" and event: response.reasoning_text.done'


@pytest.fixture
def open_responses_key(stack, db_access) -> str:
    return new_key(new_tenant("open-responses"), event_names="open_responses")


def sse_events(stack, key: str, path: str, body: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=stack.base_url, headers=headers, timeout=30) as client:
        request = client.build_request("POST" if body else "GET", path, json=body)
        response = client.send(request, stream=True)
        assert response.status_code == 200, response.read()
        events, kind = [], None
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                event = json.loads(line.removeprefix("data: "))
                assert event["type"] == kind  # the event: line and the JSON agree
                events.append(event)
    return events


def test_an_open_responses_key_gets_the_specifications_reasoning_event_names(stack, open_responses_key):
    created = sse_events(stack, open_responses_key, "/responses",
                         {"model": "echo", "input": reasoning_and_answer(TRICKY, "Done."), "stream": True})
    replayed = sse_events(stack, open_responses_key, f"/responses/{created[0]['response']['id']}?stream=true")

    for events in (created, replayed):
        types = [event["type"] for event in events]
        assert "response.reasoning.delta" in types and "response.reasoning.done" in types
        assert not any(kind.startswith("response.reasoning_text.") for kind in types)
        done = next(event for event in events if event["type"] == "response.reasoning.done")
        assert done["text"] == TRICKY
        assert "".join(e["delta"] for e in events if e["type"] == "response.reasoning.delta") == TRICKY
    assert created == replayed


def test_an_openai_key_keeps_openais_names_for_the_same_stream(stack, alice_key):
    events = sse_events(stack, alice_key, "/responses",
                        {"model": "echo", "input": reasoning_and_answer(TRICKY, "Done."), "stream": True})
    types = {event["type"] for event in events}
    assert {"response.reasoning_text.delta", "response.reasoning_text.done"} <= types
    assert "response.reasoning.delta" not in types


def test_the_socket_of_an_open_responses_key_uses_the_specifications_names(stack, open_responses_key):
    with sdk_client(stack, open_responses_key).responses.connect() as connection:
        connection.send({"type": "response.create", "model": "echo", "input": reasoning_and_answer("Hm.", "Ok.")})
        events = read_until(connection, lambda events: events[-1]["type"] == "response.completed")
    types = [event["type"] for event in events]
    assert "response.reasoning.delta" in types and "response.reasoning_text.delta" not in types


def test_every_field_the_specification_requires_is_in_every_event_and_in_get(stack, alice_key):
    events = sse_events(stack, alice_key, "/responses", {"model": "echo", "input": "Hi", "stream": True,
                                                         "tools": [{"type": "function", "name": "f"}]})
    stored = httpx.get(f"{stack.base_url}/responses/{events[0]['response']['id']}",
                       headers={"Authorization": f"Bearer {alice_key}"}).json()  # as sent: the SDK makes floats

    for response in [event["response"] for event in events if "response" in event] + [stored]:
        assert REQUIRED_RESPONSE_FIELDS <= set(response), REQUIRED_RESPONSE_FIELDS - set(response)
        assert isinstance(response["created_at"], int) and response["created_at"] == stored["created_at"]
        assert isinstance(response["top_logprobs"], int) and isinstance(response["service_tier"], str)
        assert set(response["tools"][0]) >= {"type", "name", "description", "parameters", "strict"}
    assert all(isinstance(event["sequence_number"], int) for event in events)
