"""The event builder without a database: harmony progress -> numbered OpenAI stream events.

The builder is the single place that assigns item ids, output_index, content_index and
sequence numbers, so the ordering and consistency rules of the stream are proven here.
"""

from __future__ import annotations

from typing import Any

import openai.types.responses
import pytest
from django.utils import timezone
from openai import omit
from openai.lib.streaming.responses import ResponseStreamState
from pydantic import TypeAdapter

from responses_app.harmony.parser import ContentDelta, MessageFinished, MessageStarted
from responses_app.models import Response, Tenant
from responses_app.stream.builder import EventBuilder, build_event, delta_event
from responses_app.stream.resume import ResumePoint
from responses_app.stream.sse import event_json

pytestmark = pytest.mark.core

STREAM_EVENT = TypeAdapter(openai.types.responses.ResponseStreamEvent)

REASONING = [MessageStarted("reasoning", None, None), ContentDelta("Let me "), ContentDelta("think."),
             MessageFinished("reasoning", None, None, "Let me think.")]
MESSAGE = [MessageStarted("message", None, None), ContentDelta("Hello, "), ContentDelta("world."),
           MessageFinished("message", None, None, "Hello, world.")]
FUNCTION_CALL = [MessageStarted("function_call", "functions.get_weather", "get_weather"),
                 ContentDelta('{"city":'), ContentDelta('"Paris"}'),
                 MessageFinished("function_call", "functions.get_weather", "get_weather", '{"city":"Paris"}')]


def unsaved_response() -> Response:
    return Response(id="resp_test", tenant=Tenant(name="t"), model="echo", request={}, created_at=timezone.now())


def build(steps: list, start: int = 0) -> tuple[EventBuilder, list[dict[str, Any]]]:
    builder = EventBuilder(unsaved_response(), next_sequence_number=start)
    for step in steps:
        builder.apply(step)
    events, _ = builder.drain()
    return builder, events


def assert_valid_stream_events(events: list[dict[str, Any]]) -> None:
    for event in events:
        parsed = STREAM_EVENT.validate_python(event)
        assert parsed.type == event["type"]


def test_reasoning_message_and_function_call_stream_in_openai_order(settings):
    settings.MERGE_STREAM_DELTAS = False  # one delta event per delta, as OpenAI streams them
    _, events = build(REASONING + MESSAGE + FUNCTION_CALL)

    assert [(e["type"], e.get("output_index")) for e in events] == [
        ("response.output_item.added", 0),
        ("response.content_part.added", 0),
        ("response.reasoning_text.delta", 0),
        ("response.reasoning_text.delta", 0),
        ("response.reasoning_text.done", 0),
        ("response.content_part.done", 0),
        ("response.output_item.done", 0),
        ("response.output_item.added", 1),
        ("response.content_part.added", 1),
        ("response.output_text.delta", 1),
        ("response.output_text.delta", 1),
        ("response.output_text.done", 1),
        ("response.content_part.done", 1),
        ("response.output_item.done", 1),
        ("response.output_item.added", 2),
        ("response.function_call_arguments.delta", 2),
        ("response.function_call_arguments.delta", 2),
        ("response.function_call_arguments.done", 2),
        ("response.output_item.done", 2),
    ]
    assert_valid_stream_events(events)


def test_the_sdk_stream_accumulator_rebuilds_the_final_response_from_the_events():
    builder = EventBuilder(unsaved_response(), next_sequence_number=0)
    builder.lifecycle("response.created", status="queued")
    builder.lifecycle("response.in_progress", status="in_progress")
    for step in REASONING + MESSAGE + FUNCTION_CALL:
        builder.apply(step)
    builder.lifecycle("response.completed", status="completed")
    events, _ = builder.drain()

    state = ResponseStreamState(input_tools=omit, text_format=omit)
    for event in events:
        emitted = state.handle_event(STREAM_EVENT.validate_python(event))
    final = emitted[-1].response
    assert final.output_text == "Hello, world."
    assert [item.id for item in final.output] == [item["id"] for item in builder.output]


def test_sequence_numbers_are_dense_from_the_given_start():
    builder, events = build(REASONING + MESSAGE, start=7)

    assert [e["sequence_number"] for e in events] == list(range(7, 7 + len(events)))
    builder.lifecycle("response.completed", status="completed")
    (completed,), _ = builder.drain()
    assert completed["sequence_number"] == 7 + len(events)


def test_item_id_output_index_and_content_index_agree_across_an_items_events():
    builder, events = build(REASONING + MESSAGE + FUNCTION_CALL)

    ids_by_index: dict[int, str] = {}
    for event in events:
        index = event["output_index"]
        item_id = event["item"]["id"] if "item" in event else event["item_id"]
        assert ids_by_index.setdefault(index, item_id) == item_id
        if "content_index" in event:
            assert event["content_index"] == 0
    assert ids_by_index == {index: item["id"] for index, item in enumerate(builder.output)}
    assert [item_id.split("_")[0] for item_id in ids_by_index.values()] == ["rs", "msg", "fc"]
    assert len(set(ids_by_index.values())) == 3


def test_done_events_carry_the_full_text_and_the_finished_items():
    builder, events = build(REASONING + MESSAGE + FUNCTION_CALL)
    by_type = {}
    for event in events:
        by_type.setdefault(event["type"], []).append(event)

    assert by_type["response.reasoning_text.done"][0]["text"] == "Let me think."
    assert by_type["response.output_text.done"][0]["text"] == "Hello, world."
    assert by_type["response.function_call_arguments.done"][0]["arguments"] == '{"city":"Paris"}'
    assert [e["part"]["text"] for e in by_type["response.content_part.done"]] == ["Let me think.", "Hello, world."]
    done_items = [e["item"] for e in by_type["response.output_item.done"]]
    assert done_items == builder.output
    assert [item["status"] for item in done_items] == ["completed"] * 3
    assert done_items[2]["name"] == "get_weather" and done_items[2]["call_id"].startswith("call_")
    # The added events show the items as they started: empty and in progress.
    added_items = [e["item"] for e in by_type["response.output_item.added"]]
    assert [item["status"] for item in added_items] == ["in_progress"] * 3
    assert added_items[0]["content"] == [] and added_items[1]["content"] == []
    assert added_items[2]["arguments"] == ""
    assert [e["part"]["text"] for e in by_type["response.content_part.added"]] == ["", ""]


def test_drain_returns_each_event_once_with_the_items_it_changed():
    builder = EventBuilder(unsaved_response(), next_sequence_number=0)
    builder.lifecycle("response.created", status="queued")
    for step in REASONING[:2]:
        builder.apply(step)
    assert builder.has_pending_events

    first, first_items = builder.drain()
    assert [e["type"] for e in first] == ["response.created", "response.output_item.added",
                                          "response.content_part.added", "response.reasoning_text.delta"]
    assert [(index, item["status"]) for index, item in first_items] == [(0, "in_progress")]
    assert not builder.has_pending_events
    assert builder.drain() == ([], [])

    for step in REASONING[2:] + MESSAGE[:1]:
        builder.apply(step)
    second, second_items = builder.drain()
    assert [e["sequence_number"] for e in first + second] == list(range(len(first) + len(second)))
    assert [(index, item["status"]) for index, item in second_items] == [(0, "completed"), (1, "in_progress")]


def test_drained_items_stay_as_their_events_left_them_while_the_builder_goes_on():
    # The committer thread writes a batch's rows after the loop has gone on: a row must hold
    # the text of its batch's events, not what came since.
    builder = EventBuilder(unsaved_response(), next_sequence_number=0)
    for step in MESSAGE[:2]:
        builder.apply(step)
    events, [(_, item)] = builder.drain()
    for step in MESSAGE[2:]:
        builder.apply(step)
    assert item["content"][0]["text"] == "".join(e["delta"] for e in events if e["type"].endswith(".delta"))
    assert item["status"] == "in_progress" and builder.output[0]["status"] == "completed"


def test_close_open_item_ends_a_cut_off_message_as_incomplete_with_its_done_events():
    builder, events = build(REASONING + MESSAGE[:2], start=2)
    builder.close_open_item()
    closing, items = builder.drain()

    assert [e["type"] for e in closing] == ["response.output_text.done", "response.content_part.done",
                                            "response.output_item.done"]
    assert closing[0]["text"] == "Hello, " and closing[1]["part"]["text"] == "Hello, "
    assert closing[2]["item"]["status"] == "incomplete"
    assert {e["item_id"] for e in closing[:2]} == {closing[2]["item"]["id"]} == {builder.output[1]["id"]}
    assert [e["sequence_number"] for e in events + closing] == list(range(2, 2 + len(events) + len(closing)))
    assert items == [(1, builder.output[1])]
    assert builder.open_item is None
    assert_valid_stream_events(closing)


def test_close_open_item_ends_a_cut_off_function_call_as_incomplete():
    builder, _ = build(FUNCTION_CALL[:2])
    builder.close_open_item()
    closing, _ = builder.drain()

    assert [e["type"] for e in closing] == ["response.function_call_arguments.done", "response.output_item.done"]
    assert closing[0]["arguments"] == '{"city":'
    assert closing[1]["item"]["status"] == "incomplete"
    assert_valid_stream_events(closing)


def test_close_open_item_without_an_open_item_emits_nothing():
    builder, _ = build(MESSAGE)
    builder.close_open_item()
    assert builder.drain() == ([], [])


def test_a_new_message_closes_an_unfinished_one_as_incomplete_first():
    builder, events = build(MESSAGE[:2] + MESSAGE)

    assert [e["type"] for e in events][:6] == [
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done"]
    assert [item["status"] for item in builder.output] == ["incomplete", "completed"]


def test_lifecycle_events_carry_the_response_snapshot_with_its_output():
    builder, _ = build(REASONING + MESSAGE, start=1)
    builder.lifecycle("response.completed", status="completed")
    (completed,), _ = builder.drain()

    assert completed["type"] == "response.completed"
    assert completed["response"]["id"] == "resp_test"
    assert completed["response"]["status"] == "completed"
    assert completed["response"]["output"] == builder.output
    assert_valid_stream_events([completed])


@pytest.mark.parametrize("event_type, status", [
    ("response.created", "queued"),
    ("response.in_progress", "in_progress"),
    ("response.completed", "completed"),
    ("response.failed", "failed"),
    ("response.incomplete", "incomplete"),
    ("response.incomplete", "cancelled"),
])
def test_every_lifecycle_event_validates_against_the_sdk(event_type, status):
    builder = EventBuilder(unsaved_response(), next_sequence_number=3)
    builder.lifecycle(event_type, status=status)
    (event,), _ = builder.drain()

    assert (event["type"], event["sequence_number"], event["response"]["status"]) == (event_type, 3, status)
    assert_valid_stream_events([event])


DELTA_CLASSES = {
    "response.output_text.delta": (openai.types.responses.ResponseTextDeltaEvent, {"content_index": 0, "logprobs": []}),
    "response.reasoning_text.delta": (openai.types.responses.ResponseReasoningTextDeltaEvent, {"content_index": 0}),
    "response.function_call_arguments.delta": (openai.types.responses.ResponseFunctionCallArgumentsDeltaEvent, {}),
}


@pytest.mark.parametrize("event_type", sorted(DELTA_CLASSES))
def test_a_delta_built_without_validation_is_the_sdk_types_dump_byte_for_byte(event_type):
    event_class, extra = DELTA_CLASSES[event_type]
    fast = delta_event(event_type, 41, "msg_abc", 2, 'say "hi"\n\u00e9')
    validated = build_event(event_class, type=event_type, sequence_number=41, item_id="msg_abc", output_index=2,
                            delta='say "hi"\n\u00e9', **extra)
    assert event_json(fast) == event_json(validated)


def test_an_items_deltas_committed_together_are_one_event_and_the_numbers_stay_dense():
    builder = EventBuilder(unsaved_response(), next_sequence_number=0)
    for step in REASONING + MESSAGE[:2]:
        builder.apply(step)
    first, _ = builder.drain()  # a commit between an item's deltas
    for step in MESSAGE[2:] + FUNCTION_CALL:
        builder.apply(step)
    second, _ = builder.drain()
    events = first + second

    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    deltas = [(event["type"], event["delta"]) for event in events if event["type"].endswith(".delta")]
    assert deltas == [("response.reasoning_text.delta", "Let me think."), ("response.output_text.delta", "Hello, "),
                      ("response.output_text.delta", "world."),
                      ("response.function_call_arguments.delta", '{"city":"Paris"}')]
    assert_valid_stream_events(events)


def test_a_merged_text_delta_carries_the_logprobs_of_all_its_tokens():
    builder = EventBuilder(unsaved_response(), next_sequence_number=0)
    builder.apply(MessageStarted("message", None, None))
    builder.apply(ContentDelta("Hel"), logprobs=[[(13225, -0.5), (200, -1.5)]])
    builder.apply(ContentDelta("lo"), logprobs=[[(385, -0.25)]])
    events, _ = builder.drain()

    (delta,) = [event for event in events if event["type"] == "response.output_text.delta"]
    assert delta["delta"] == "Hello"
    assert [entry["logprob"] for entry in delta["logprobs"]] == [-0.5, -0.25]
    assert [len(entry["top_logprobs"]) for entry in delta["logprobs"]] == [1, 0]
    assert_valid_stream_events(events)


def test_the_builders_deltas_are_the_fast_ones():
    _, events = build(REASONING + MESSAGE + FUNCTION_CALL)
    deltas = [event for event in events if event["type"].endswith(".delta")]
    assert [event["type"] for event in deltas] == ["response.reasoning_text.delta", "response.output_text.delta",
                                                  "response.function_call_arguments.delta"]
    for event in deltas:
        event_class, extra = DELTA_CLASSES[event["type"]]
        fields = {key: event[key] for key in ("type", "sequence_number", "item_id", "output_index", "delta")}
        assert event_json(event) == event_json(build_event(event_class, **fields, **extra))


def test_content_outside_of_a_message_is_rejected():
    builder = EventBuilder(unsaved_response(), next_sequence_number=0)
    with pytest.raises(ValueError):
        builder.apply(ContentDelta("stray"))
    with pytest.raises(ValueError):
        builder.apply(MessageFinished("message", None, None, "stray"))


def test_a_tool_call_message_has_no_output_item():
    builder = EventBuilder(unsaved_response(), next_sequence_number=0)
    with pytest.raises(ValueError):
        builder.apply(MessageStarted("tool_call", "browser.search", None))
    assert builder.drain() == ([], [])


def test_output_passed_in_is_continued_at_the_next_output_index():
    earlier = {"id": "rs_earlier", "type": "reasoning", "summary": [],
               "content": [{"type": "reasoning_text", "text": "x"}], "status": "completed"}
    builder = EventBuilder(unsaved_response(), next_sequence_number=10, resumed=ResumePoint([earlier]))
    for step in MESSAGE:
        builder.apply(step)
    events, items = builder.drain()

    assert {e["output_index"] for e in events} == {1}
    assert [index for index, _ in items] == [1]
    assert builder.output[0] is earlier
    assert events[0]["sequence_number"] == 10
