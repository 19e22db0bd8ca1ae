"""Helpers for the API tests, in process and live: echo scripts, stream collection,
tenants and keys, waits, invariant checks."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import openai

TERMINAL_EVENTS = {"response.completed", "response.failed", "response.incomplete"}


def reasoning_and_answer(reasoning: str, answer: str) -> str:
    """An echo script: the model's own harmony tokens for a reasoning item and a message."""
    return (f"<|channel|>analysis<|message|>{reasoning}<|end|>"
            f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>")


def function_call_then_answer(name: str, arguments: str, answer: str) -> str:
    return (f"<|channel|>analysis<|message|>I should call {name}.<|end|>"
            f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json"
            f"<|message|>{arguments}<|call|>"
            f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>")


def events_of(stream: Any) -> list[dict[str, Any]]:
    """Every event of an SDK stream, as plain dicts, until the stream ends."""
    return [event.to_dict() for event in stream]


def take(stream: Any, count: int) -> list[dict[str, Any]]:
    """The first ``count`` events, then the connection is closed (a client breaking off)."""
    events = []
    for event in stream:
        events.append(event.to_dict())
        if len(events) == count:
            break
    stream.close()
    return events


def assert_dense(events: list[dict[str, Any]], start: int = 0) -> None:
    assert [e["sequence_number"] for e in events] == list(range(start, start + len(events)))


def wait_for_status(client: openai.OpenAI, response_id: str, statuses: set[str], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        response = client.responses.retrieve(response_id)
        if response.status in statuses:
            return response
        if time.monotonic() > deadline:
            raise AssertionError(f"{response_id} is still {response.status} after {timeout}s")
        time.sleep(0.2)


def wait_until(predicate, timeout: float = 30, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


def new_tenant(prefix: str = "tenant", **limits: Any) -> str:
    """A tenant of the test's own (a fresh name), so that its limits reach nobody else."""
    from responses_app.models import Tenant

    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    Tenant.objects.create(name=name, **limits)
    return name


def new_key(tenant: str, **options: Any) -> str:
    from responses_app.tenancy.api_keys import create_api_key

    return create_api_key(tenant, "test key", **options)[1]


# --- the Responses WebSocket ----------------------------------------------------------------


def without_lane(event: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in event.items() if name != "stream_id"}


def read_until(connection: Any, done: Any) -> list[dict[str, Any]]:
    """Events (as dicts) until ``done(events)`` holds."""
    events: list[dict[str, Any]] = []
    for event in connection:
        events.append(event.to_dict())
        if done(events):
            return events
    raise AssertionError(f"the socket closed after {len(events)} events")


def ended(count: int = 1):
    return lambda events: sum(e["type"] in TERMINAL_EVENTS for e in events) >= count


def sse_replay(client: openai.OpenAI, response_id: str) -> list[dict[str, Any]]:
    return events_of(client.responses.retrieve(response_id, stream=True))


def of_response(events: list[dict[str, Any]], response_id: str) -> list[dict[str, Any]]:
    """The events of one response in a single-lane run of events (they come one response
    after another): from its response.created to its terminal event."""
    start = next(i for i, e in enumerate(events) if e["type"] == "response.created"
                 and e["response"]["id"] == response_id)
    end = next(i for i in range(start, len(events)) if events[i]["type"] in TERMINAL_EVENTS)
    return events[start:end + 1]


# --- the OpenAPI document's fuzzing ---------------------------------------------------------

# A valid body of each create that a link starts from (the webhook endpoint's url is the test's receiver).
VALID_CREATES: dict[str, dict[str, Any]] = {
    "POST /v1/responses": {"model": "echo", "input": "Hi", "background": True},
    "POST /v1/conversations": {"items": [{"role": "user", "content": "Hi"}]},
    "POST /v1/conversations/{conversation_id}/items": {"items": [{"type": "message", "role": "user",
                                                                  "content": "And then?"}]},
    "POST /v1/containers": {"name": "stateful"},
    "POST /v1/webhook_endpoints": {"name": "stateful", "event_types": ["response.completed"]},
    "POST /v1/scheduled_responses": {"name": "stateful", "schedule": {"every_seconds": 3600},
                                     "request": {"model": "echo", "input": "Hi"}},
    "POST /v1/prompts": {"instructions": "Greet {{name}}."},
    "POST /v1/vector_stores": {"name": "stateful"},
}


class ExtensionApi:
    """The extension endpoints, called as a client would with the SDK's own transport."""

    def __init__(self, client: openai.OpenAI) -> None:
        self.client = client

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.client.post(path, body=body, cast_to=httpx.Response).json()

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        return self.client.get(path, options={"params": query}, cast_to=httpx.Response).json()

    def delete(self, path: str) -> dict[str, Any]:
        return self.client.delete(path, cast_to=httpx.Response).json()


ERROR_KEYS = {"message", "type", "param", "code"}


def assert_openai_error(response: httpx.Response, status: int, param: str | None = None) -> dict[str, Any]:
    """The response is ``status`` with exactly ``{"error": {message, type, param, code}}``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == ERROR_KEYS
    assert isinstance(error["message"], str) and error["message"].strip()
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert error["code"] is None or isinstance(error["code"], str)
    return error


def tenant_row_counts(tenant_name: str) -> dict[str, int]:
    from responses_app.models import InputItem, OutputItem, Response, ResponseEvent

    return {
        "responses": Response.objects.filter(tenant__name=tenant_name).count(),
        "input_items": InputItem.objects.filter(response__tenant__name=tenant_name).count(),
        "output_items": OutputItem.objects.filter(response__tenant__name=tenant_name).count(),
        "events": ResponseEvent.objects.filter(response__tenant__name=tenant_name).count(),
    }


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF that shows ``text`` (ASCII, no parentheses) in Helvetica."""
    stream = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
