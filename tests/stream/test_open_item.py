"""An open item's row is rewritten at most every ITEM_ROW_INTERVAL_S while its text grows
(stream/builder.py drain), and whoever reads a running response's output gets the text its
committed deltas carry (selectors.with_open_item_as_streamed): a GET is never staler than the stream."""

from __future__ import annotations

import pytest

from responses_app import selectors
from responses_app.dispatch import task_queue
from responses_app.harmony.parser import ContentDelta, MessageFinished, MessageStarted
from responses_app.models import OutputItem, Response, ResponseStatus
from responses_app.services.create import create_response
from responses_app.services.ended import end_response
from responses_app.stream import builder as builder_module
from responses_app.stream.builder import EventBuilder
from responses_app.stream.resume import resume_point
from responses_app.stream.store import save_batch
from responses_app.tenancy.api_keys import create_api_key
from responses_app.validation.create import parse_create_request
from responses_app.worker.claim import claim

pytestmark = [pytest.mark.usefixtures("db_access"), pytest.mark.core]
OWNER = "test-open-item-worker"


@pytest.fixture(autouse=True)
def no_broker(monkeypatch) -> None:
    monkeypatch.setattr(task_queue, "send", lambda response, task_id, priority=0, **_: None)


def streaming(kind: str, **request) -> EventBuilder:
    tenant = create_api_key("open-item")[0].tenant
    response = claim(create_response(tenant, parse_create_request({"model": "echo", "input": "hi", **request})).pk,
                     OWNER)
    builder = EventBuilder(response, next_sequence_number=1)
    builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    builder.apply(MessageStarted(kind=kind, recipient="functions.lookup" if kind == "function_call" else None,
                                 name="lookup" if kind == "function_call" else None))
    return builder


def row_of(builder: EventBuilder) -> dict:
    return OutputItem.objects.get(response_id=builder.response.pk, output_index=0).data


def fresh(builder: EventBuilder) -> Response:
    return Response.objects.get(pk=builder.response.pk)


@pytest.mark.parametrize(("kind", "text_of"), [
    ("message", lambda item: item["content"][0]["text"]),
    ("reasoning", lambda item: item["content"][0]["text"]),
    ("function_call", lambda item: item["arguments"]),
])
def test_a_growing_items_row_lags_but_every_read_of_the_running_response_has_all_its_committed_text(
        kind, text_of, monkeypatch):
    monkeypatch.setattr(builder_module, "ITEM_ROW_INTERVAL_S", 3600.0)  # the row is not rewritten in this test
    builder = streaming(kind)
    save_batch(builder.response, OWNER, builder)  # the item's row, empty
    streamed = ""
    for word in ("one ", "two ", "three"):
        builder.apply(ContentDelta(text=word))
        streamed += word
        save_batch(builder.response, OWNER, builder)

    assert text_of(row_of(builder)) == ""  # never rewritten: its deltas carry the text
    [item] = selectors.output_items(fresh(builder))
    assert text_of(item) == streamed
    assert text_of(selectors.render_response(fresh(builder))["output"][0]) == streamed
    assert text_of(resume_point(fresh(builder)).open_item) == streamed

    # The reaper's end (no builder: rebuilt from what was committed) closes it with all of it.
    end_response(builder.response.pk, ResponseStatus.FAILED, error={"code": "server_error", "message": "lost"})
    assert text_of(row_of(builder)) == streamed
    assert text_of(selectors.output_items(fresh(builder))[0]) == streamed


def test_the_row_is_rewritten_once_its_interval_has_passed_and_at_once_when_the_item_is_done(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(builder_module.time, "monotonic", lambda: clock[0])
    builder = streaming("message")
    save_batch(builder.response, OWNER, builder)
    builder.apply(ContentDelta(text="Hello"))
    clock[0] += builder_module.ITEM_ROW_INTERVAL_S / 2
    save_batch(builder.response, OWNER, builder)
    assert row_of(builder)["content"][0]["text"] == ""
    builder.apply(ContentDelta(text=", world"))
    clock[0] += builder_module.ITEM_ROW_INTERVAL_S / 2
    save_batch(builder.response, OWNER, builder)
    assert row_of(builder)["content"][0]["text"] == "Hello, world"
    builder.apply(ContentDelta(text="!"))
    builder.apply(MessageFinished(kind="message", recipient=None, name=None, text="Hello, world!"))
    save_batch(builder.response, OWNER, builder)
    assert row_of(builder)["content"][0]["text"] == "Hello, world!"
    assert row_of(builder)["status"] == "completed"
    assert selectors.output_items(fresh(builder))[0] == row_of(builder)


def test_an_answer_with_logprobs_writes_its_row_with_every_batch():
    builder = streaming("message", include=["message.output_text.logprobs"], top_logprobs=1)
    save_batch(builder.response, OWNER, builder)
    builder.apply(ContentDelta(text="Hi"), logprobs=[[(13, -0.5), (14, -1.0)]])
    save_batch(builder.response, OWNER, builder)
    part = row_of(builder)["content"][0]
    assert part["text"] == "Hi" and len(part["logprobs"]) == 1
