"""A response whose worker is lost mid-answer is continued by another worker from its last
committed event (worker/continuation.py): the real worker code in this process, lost at
every point of its stream, then the reaper and the next worker.

The loss is the one boundary simulated here: at its Nth tick the worker commits what it
has and stops dead, as a SIGKILLed node leaves its response (tests/faults kills real
processes).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

import pytest
from django.core.files.base import ContentFile
from django.test import override_settings

from responses_app.files.store import create_file
from responses_app.models import Response, ResponseEvent, ResponseStatus, Tenant
from responses_app.services.create import create_response
from responses_app.services.recovery import reap_expired_leases
from responses_app.stream.resume import ResumePoint
from responses_app.validation.create import parse_create_request
from responses_app.vector_stores import ingest
from responses_app.vector_stores.requests import parse_file_create, parse_vector_store_create
from responses_app.vector_stores.store import attach_file, create_vector_store
from responses_app.worker.batch_writer import BatchWriter
from responses_app.worker.continuation import ended_with, open_item_action
from responses_app.worker.run import run_response
from tests.services.test_services import ANSWER_SCRIPT, CALL_SCRIPT, WEATHER_TOOL, expire_lease

pytestmark = [pytest.mark.django_db, pytest.mark.core]

# One token per chunk, so that the worker ticks (and can be lost) after every token.
PER_TOKEN = {"echo_token_delay_ms": "0.01"}
PREAMBLE_SCRIPT = ("<|channel|>analysis<|message|>Look it up.<|end|>"
                   "<|start|>assistant<|channel|>commentary<|message|>Checking the weather now.<|end|>"
                   "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
                   '<|message|>{"city":"Paris, France"}<|call|>')


class WorkerLost(BaseException):
    """The node went away: nothing more of its worker runs (not even an ``except Exception``)."""


@contextmanager
def worker_lost_at_tick(tick: int) -> Iterator[None]:
    """The worker commits what it has at its ``tick``-th tick, then is lost."""
    original = BatchWriter.tick
    ticks = 0

    async def tick_or_die(self: BatchWriter) -> None:
        nonlocal ticks
        ticks += 1
        if ticks == tick:
            await self.flush()
            raise WorkerLost()
        await original(self)

    with patch.object(BatchWriter, "tick", tick_or_die):
        yield


def create(tenant: Tenant, django_capture_on_commit_callbacks: Any, **body: Any) -> Response:
    with django_capture_on_commit_callbacks(execute=False):
        return create_response(tenant, parse_create_request({"model": "echo", "metadata": PER_TOKEN, **body}))


def lose_worker_then_continue(response: Response, tick: int) -> bool:
    """Run the response until its worker is lost at ``tick``, then reap and run it again.
    False when it ended before that tick."""
    with worker_lost_at_tick(tick):
        try:
            run_response(response.pk)
        except WorkerLost:
            lost = True
        else:
            lost = False
    if lost:
        response.refresh_from_db()
        assert response.status == ResponseStatus.IN_PROGRESS
        expire_lease(response)
        assert reap_expired_leases() == {"requeued": 0, "continued": 1, "failed": 0} or \
            not response.output_items.exists()
        run_response(response.pk)
    response.refresh_from_db()
    return lost


def events(response: Response) -> list[dict[str, Any]]:
    return [json.loads(data) for data in ResponseEvent.objects.filter(response=response)
            .order_by("sequence_number").values_list("data", flat=True)]


def outcome(response: Response) -> dict[str, Any]:
    """What a client keeps of the response: its items without their ids, and its usage."""
    terminal = events(response)[-1]["response"]
    output = [{key: value for key, value in item.items() if key not in ("id", "call_id")}
              for item in terminal["output"]]
    return {"status": terminal["status"], "output": output, "output_tokens": terminal["usage"]["output_tokens"],
            "reasoning_tokens": terminal["usage"]["output_tokens_details"]["reasoning_tokens"]}


def assert_one_coherent_stream(response: Response) -> None:
    """Dense sequence numbers, one in_progress and one terminal event, and each item's
    deltas add up to its final text, with no event repeated."""
    stream = events(response)
    assert [event["sequence_number"] for event in stream] == list(range(len(stream)))
    kinds = [event["type"] for event in stream]
    assert kinds.count("response.in_progress") == 1 and kinds[-1] == "response.completed"
    assert sum(kind in ("response.completed", "response.failed", "response.incomplete") for kind in kinds) == 1
    deltas: dict[str, str] = defaultdict(str)
    added, done = [], []
    for event in stream:
        if event["type"].endswith(".delta") and "item_id" in event:
            deltas[event["item_id"] + ("/summary" if "summary" in event["type"] else "")] += event["delta"]
        if event["type"] == "response.output_item.added":
            added.append(event["item"]["id"])
        if event["type"] == "response.output_item.done":
            done.append(event["item"]["id"])
    output = stream[-1]["response"]["output"]
    assert added == done == [item["id"] for item in output]
    for item in output:
        text = (item.get("arguments") or item.get("input") or
                "".join(part.get("text", "") for part in item.get("content") or []))
        assert deltas.get(item["id"], "") == text, item
        if item.get("summary"):
            assert deltas[item["id"] + "/summary"] == item["summary"][0]["text"], item


def reference(tenant: Tenant, capture: Any, **body: Any) -> dict[str, Any]:
    response = create(tenant, capture, **body)
    run_response(response.pk)
    response.refresh_from_db()
    return outcome(response)


@pytest.mark.parametrize("body", [
    pytest.param({"input": ANSWER_SCRIPT}, id="reasoning-then-answer"),
    pytest.param({"input": CALL_SCRIPT, "tools": [WEATHER_TOOL]}, id="function-call"),
    pytest.param({"input": PREAMBLE_SCRIPT, "tools": [WEATHER_TOOL]}, id="preamble-then-call"),
    pytest.param({"input": ANSWER_SCRIPT, "reasoning": {"summary": "detailed"}}, id="reasoning-summary"),
])
def test_a_response_lost_at_any_point_is_continued_to_exactly_the_uninterrupted_answer(
        tenant, django_capture_on_commit_callbacks, body):
    assert_continued_at_every_point(tenant, django_capture_on_commit_callbacks, body)


def test_a_file_search_lost_at_any_point_is_continued_to_exactly_the_uninterrupted_answer(
        tenant, django_capture_on_commit_callbacks, monkeypatch):
    monkeypatch.setattr(ingest, "send_ingest_task", ingest.ingest)  # ingested here, at once
    store = create_vector_store(tenant, parse_vector_store_create({"name": "handbook"}))
    upload = ContentFile(b"Every employee has 27 days of paid annual leave.", name="leave.md")
    stored = create_file(tenant, upload, "leave.md", "assistants", None)
    with django_capture_on_commit_callbacks(execute=True):
        attach_file(tenant, store.pk, parse_file_create({"file_id": stored.pk}))
    script = ("<|channel|>analysis<|message|>Look in the handbook.<|end|>"
              "<|start|>assistant to=file_search.msearch<|channel|>analysis <|constrain|>json"
              '<|message|>{"queries": ["annual leave"]}<|call|>'
              "<|start|>assistant<|channel|>final<|message|>You have 27 days 【0†leave.md】.<|return|>")
    body = {"input": script, "tools": [{"type": "file_search", "vector_store_ids": [store.pk]}],
            "include": ["file_search_call.results"]}
    assert_continued_at_every_point(tenant, django_capture_on_commit_callbacks, body)


def assert_continued_at_every_point(tenant: Tenant, capture: Any, body: dict[str, Any]) -> None:
    expected = reference(tenant, capture, **body)
    tick, continued = 1, 0
    while True:
        response = create(tenant, capture, **body)
        if not lose_worker_then_continue(response, tick):
            break  # the worker finished before this tick
        assert outcome(response) == expected, f"lost at tick {tick}"
        assert_one_coherent_stream(response)
        continued += response.recoveries
        tick += 1
    assert continued >= 10  # the points of loss span the stream, not only its start


def test_a_commentary_message_keeps_its_phase_on_the_wire_and_in_the_next_prompt(
        tenant, django_capture_on_commit_callbacks):
    response = create(tenant, django_capture_on_commit_callbacks, input=PREAMBLE_SCRIPT, tools=[WEATHER_TOOL])
    run_response(response.pk)
    output = events(response)[-1]["response"]["output"]
    assert [(item["type"], item.get("phase")) for item in output] == [
        ("reasoning", None), ("message", "commentary"), ("function_call", None)]


@override_settings(RESPONSE_MAX_RECOVERIES=2)
def test_a_response_that_keeps_losing_its_worker_fails_after_the_recoveries_allowed(
        tenant, django_capture_on_commit_callbacks):
    response = create(tenant, django_capture_on_commit_callbacks, input=ANSWER_SCRIPT)
    for _ in range(3):
        with worker_lost_at_tick(4), pytest.raises(WorkerLost):
            run_response(response.pk)
        expire_lease(response)
        counts = reap_expired_leases()
    assert counts == {"requeued": 0, "continued": 0, "failed": 1}
    response.refresh_from_db()
    assert (response.status, response.recoveries) == (ResponseStatus.FAILED, 2)
    assert response.error == {"code": "server_error", "message": (
        "The workers running this response stopped unexpectedly 3 times; it was ended after 2 continuations "
        "(RESPONSE_MAX_RECOVERIES).")}
    stream = events(response)
    assert [event["sequence_number"] for event in stream] == list(range(len(stream)))
    assert stream[-1]["type"] == "response.failed"


# --- the rule for the item left open ------------------------------------------------------------


def point(item: dict[str, Any], *events: str) -> ResumePoint:
    return ResumePoint([{"type": "reasoning", "content": [], "summary": []}, item], open_index=1,
                       open_item_events=frozenset(events))


@pytest.mark.parametrize("item, events, read_only, action", [
    ({"type": "message"}, (), False, "reopen"),
    ({"type": "function_call"}, ("response.function_call_arguments.delta",), False, "reopen"),
    ({"type": "reasoning"}, ("response.reasoning_text.delta",), False, "reopen"),
    ({"type": "reasoning"}, ("response.reasoning_text.done",), False, "summarize"),
    # A web search's arguments are not kept (nor shown): the model writes the call again.
    ({"type": "web_search_call"}, ("response.web_search_call.searching",), False, "reopen"),
    ({"type": "file_search_call"}, ("response.file_search_call.searching",), False, "reopen"),
    ({"type": "code_interpreter_call"}, ("response.code_interpreter_call_code.delta",), False, "reopen"),
    ({"type": "code_interpreter_call"}, ("response.code_interpreter_call_code.done",), False, "rerun"),
    ({"type": "code_interpreter_call"}, ("response.code_interpreter_call_code.done",
                                         "response.code_interpreter_call.interpreting"), False, "interrupt"),
    ({"type": "mcp_call"}, ("response.mcp_call_arguments.delta",), False, "reopen"),
    ({"type": "mcp_call"}, ("response.mcp_call_arguments.done",), True, "rerun"),
    ({"type": "mcp_call"}, ("response.mcp_call_arguments.done",), False, "interrupt"),
    ({"type": "mcp_list_tools"}, ("response.mcp_list_tools.in_progress",), False, "rerun"),
])
def test_the_open_item_is_reopened_run_again_or_interrupted_by_what_its_events_say(item, events, read_only, action):
    assert open_item_action(point(item, *events), read_only) == action


@pytest.mark.parametrize("last, end", [
    ({"type": "message", "phase": "final_answer", "status": "completed"}, (ResponseStatus.COMPLETED, None)),
    ({"type": "message", "status": "completed"}, (ResponseStatus.COMPLETED, None)),
    ({"type": "message", "phase": "commentary", "status": "completed"}, None),
    ({"type": "function_call", "status": "completed"}, (ResponseStatus.COMPLETED, None)),
    ({"type": "tool_search_call", "execution": "client", "status": "completed"}, (ResponseStatus.COMPLETED, None)),
    ({"type": "tool_search_call", "execution": "server", "status": "completed"}, None),
    ({"type": "code_interpreter_call", "status": "failed"}, None),
    ({"type": "reasoning", "status": "incomplete"}, (ResponseStatus.INCOMPLETE, {"reason": "max_output_tokens"})),
])
def test_a_response_whose_last_item_ended_it_ends_without_the_model(last, end):
    assert ended_with([{"type": "reasoning", "status": "completed"}, last]) == end
