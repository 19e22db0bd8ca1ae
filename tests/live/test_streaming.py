"""Streams: resume from any sequence number, across web restarts, cancel, disconnects,
a lost worker, keep-alives."""

from __future__ import annotations

import signal
import threading
import time

import httpx
import openai
import pytest

from tests.helpers import (
    assert_dense,
    events_of,
    reasoning_and_answer,
    take,
    wait_for_status,
    wait_until,
)

# About fifty events when each token is committed apart: lifecycle, a reasoning item and a
# message with ~20 deltas each.
FIFTY_EVENT_SCRIPT = reasoning_and_answer(
    "The user wants a slightly longer answer, so I will write out a few more words now.",
    "Here is a slightly longer answer, written token by token for the resume test, with a few more words.",
)
SLOW = {"echo_token_delay_ms": "40"}
# A token every 60 ms, more than the stack's 50 ms flush: each delta is committed apart
# (an item's deltas committed together are one event).
TOKEN_PER_COMMIT = {"echo_token_delay_ms": "60"}


def replay(client: openai.OpenAI, response_id: str, starting_after: int | None = None) -> list[dict]:
    if starting_after is None:
        return events_of(client.responses.retrieve(response_id, stream=True))
    return events_of(client.responses.retrieve(response_id, stream=True, starting_after=starting_after))


@pytest.mark.core
def test_replay_from_every_sequence_number_equals_the_tail_of_the_full_stream(alice):
    live = events_of(alice.responses.create(model="echo", input=FIFTY_EVENT_SCRIPT, stream=True, background=True,
                                            metadata=TOKEN_PER_COMMIT))
    assert len(live) >= 40 and live[-1]["type"] == "response.completed"
    assert_dense(live)
    response_id = live[0]["response"]["id"]
    assert replay(alice, response_id) == live
    for n in range(-1, len(live)):
        assert replay(alice, response_id, starting_after=n) == live[n + 1:], n


@pytest.mark.core
def test_an_items_tokens_committed_together_are_one_delta_that_the_sdk_accumulates(alice):
    with alice.responses.stream(model="echo", input=FIFTY_EVENT_SCRIPT) as stream:
        events = [event.to_dict() for event in stream]
        final = stream.get_final_response()
    deltas = [event["delta"] for event in events if event["type"] == "response.output_text.delta"]
    answer_tokens = final.usage.output_tokens - final.usage.output_tokens_details.reasoning_tokens

    assert "".join(deltas) == final.output_text and final.output_text.startswith("Here is a slightly")
    assert 1 <= len(deltas) and len(deltas) * 2 <= answer_tokens  # the echo engine's tokens come at once
    assert_dense(events)


@pytest.mark.core
def test_break_after_k_events_and_resume_equals_the_uninterrupted_stream_for_every_k(alice):
    # How many events a response has depends on how its tokens fell into commits: k runs
    # until it has broken off before each event of the response at hand.
    k, count = 1, 2
    while k < count:
        stream = alice.responses.create(model="echo", input=FIFTY_EVENT_SCRIPT, stream=True, background=True,
                                        metadata={"echo_token_delay_ms": "10"})
        prefix = take(stream, k)
        response_id = prefix[0]["response"]["id"]
        resumed = replay(alice, response_id, starting_after=prefix[-1]["sequence_number"])
        full = replay(alice, response_id)
        assert prefix + resumed == full, k
        assert_dense(full)
        assert full[-1]["type"] == "response.completed"
        count, k = len(full), k + 1
    assert count >= 15


def test_resume_after_the_web_process_is_killed_mid_stream(alice, stack):
    stream = alice.responses.create(model="echo", input=FIFTY_EVENT_SCRIPT, stream=True, background=True,
                                    metadata=SLOW)
    prefix = []
    with pytest.raises((httpx.HTTPError, openai.APIError)):  # noqa: B017 - the connection dies
        for event in stream:
            prefix.append(event.to_dict())
            if len(prefix) == 8:
                stack.kill("web", signal.SIGKILL)
    stack.start("web")
    response_id = prefix[0]["response"]["id"]
    resumed = replay(alice, response_id, starting_after=prefix[-1]["sequence_number"])
    assert resumed[-1]["type"] == "response.completed"
    assert prefix + resumed == replay(alice, response_id)


@pytest.mark.core
def test_cancel_mid_generation_ends_the_stream_and_aborts_the_engine_request(alice, stack):
    stream = alice.responses.create(model="echo", input=FIFTY_EVENT_SCRIPT, stream=True, background=True,
                                    metadata=SLOW)
    events = []
    for event in stream:
        events.append(event.to_dict())
        if event.type == "response.reasoning_text.delta":
            break
    response_id = events[0]["response"]["id"]
    assert f"{response_id}:1" in stack.engine_requests()["running"]

    cancelled = alice.responses.cancel(response_id)
    assert cancelled.status == "cancelled"
    events += [event.to_dict() for event in stream]  # the open stream ends promptly
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["status"] == "cancelled"
    assert all(item["status"] != "in_progress" for item in events[-1]["response"]["output"])
    assert_dense(events)
    requests = stack.engine_requests()
    assert f"{response_id}:1" in requests["aborted"]
    assert f"{response_id}:1" not in requests["running"]
    # Cancelling again changes nothing.
    again = alice.responses.cancel(response_id)
    assert again.to_dict() == alice.responses.retrieve(response_id).to_dict() and again.status == "cancelled"
    assert replay(alice, response_id) == events


@pytest.mark.core
def test_cancel_of_a_finished_response_returns_it_unchanged(alice):
    done = alice.responses.create(model="echo", input="quick", background=True)
    finished = wait_for_status(alice, done.id, {"completed"})
    assert alice.responses.cancel(done.id).to_dict() == finished.to_dict()


@pytest.mark.core
def test_a_foreground_stream_is_cancelled_when_its_client_disconnects(alice):
    stream = alice.responses.create(model="echo", input=FIFTY_EVENT_SCRIPT, stream=True, metadata=SLOW)
    prefix = take(stream, 5)
    cancelled = wait_for_status(alice, prefix[0]["response"]["id"], {"cancelled", "completed"}, timeout=30)
    assert cancelled.status == "cancelled"


@pytest.mark.core
def test_a_background_stream_keeps_running_when_its_client_disconnects(alice):
    stream = alice.responses.create(model="echo", input=FIFTY_EVENT_SCRIPT, stream=True, background=True,
                                    metadata={"echo_token_delay_ms": "10"})
    prefix = take(stream, 5)
    assert wait_for_status(alice, prefix[0]["response"]["id"], {"cancelled", "completed"}).status == "completed"


def test_a_killed_worker_s_response_is_continued_and_its_stream_goes_on_to_the_whole_answer(alice, stack):
    expected = alice.responses.create(model="echo", input=FIFTY_EVENT_SCRIPT).output
    stream = alice.responses.create(model="echo", input=FIFTY_EVENT_SCRIPT, stream=True, background=True,
                                    metadata={"echo_token_delay_ms": "100"})
    events = []
    killed = None
    for event in stream:
        events.append(event.to_dict())
        if event.type == "response.output_text.delta" and killed is None:
            stack.kill("worker", signal.SIGKILL)  # mid-answer, its reasoning item done
            killed = time.monotonic()
            # Its supervisor starts a new worker, whose beat-scheduled reaper finds the
            # expired lease and re-queues the response (a fleet's other workers would do the same).
            stack.start("worker")
    assert time.monotonic() - killed < 60
    final = events[-1]["response"]
    assert final["status"] == "completed"
    # The same stream, never reconnected: a pause, then the rest of the answer.
    assert [item["content"][0]["text"] for item in final["output"]] == [
        item.content[0].text for item in expected]
    answer = final["output"][1]
    assert "".join(event["delta"] for event in events if event["type"] == "response.output_text.delta") == (
        answer["content"][0]["text"])
    assert [event["type"] for event in events].count("response.output_item.added") == 2
    assert_dense(events)
    assert replay(alice, final["id"]) == events


def test_streams_carry_keep_alive_comments_that_the_sdk_tolerates(alice, stack, alice_key):
    created = alice.responses.create(model="echo", input="slow", background=True, max_output_tokens=3,
                                     metadata={"echo_token_delay_ms": "1500"})
    raw: list[str] = []

    def read_raw() -> None:
        with httpx.stream("GET", f"{stack.base_url}/responses/{created.id}", params={"stream": "true"},
                          headers={"Authorization": f"Bearer {alice_key}"}, timeout=30) as http:
            assert http.headers["content-type"].startswith("text/event-stream")
            assert http.headers["cache-control"] == "no-cache"
            assert http.headers["x-accel-buffering"] == "no"
            raw.extend(http.iter_lines())

    reader = threading.Thread(target=read_raw)
    reader.start()
    events = replay(alice, created.id)
    reader.join(timeout=30)
    assert events[-1]["type"] == "response.incomplete"
    assert ": keep-alive" in raw
    assert not any(line.startswith("id:") for line in raw)
    assert "data: [DONE]" not in raw
    assert wait_until(lambda: not reader.is_alive())
