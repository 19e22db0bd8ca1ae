"""Many responses of one worker process at once, each a task on its engine loop
(worker/run.py): while 100 paced responses stream, one is cancelled mid-stream, one is
steered over the WebSocket and one runs a code interpreter call in a tool thread. Each
ends once, with its stored events dense, one terminal event, and its answer whole. On a
stack whose worker has threads for 200 responses (``crowded_stack``)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from tests.helpers import (
    TERMINAL_EVENTS,
    assert_dense,
    ended,
    of_response,
    read_until,
    reasoning_and_answer,
    sse_replay,
    wait_for_status,
)
from tests.live.test_tools import final, python_call, script

pytestmark = pytest.mark.core

STREAMING = 97  # besides the cancelled, the steered and the tool-calling one: 100 at once
PACED = {"echo_token_delay_ms": "10"}
ANSWER = " ".join(f"word{i}" for i in range(150))  # about 300 tokens: 3 s at 10 ms a token


def test_one_of_100_is_cancelled_one_steered_one_calls_a_tool_and_every_one_ends_once(crowded_stack):
    alice = crowded_stack.client()
    answer = reasoning_and_answer("Pacing along.", ANSWER)
    with ThreadPoolExecutor(16) as pool:
        ids = list(pool.map(lambda _: alice.responses.create(model="echo", input=answer, background=True,
                                                              metadata=PACED).id, range(STREAMING + 1)))
    cancelled, streaming = ids[0], ids[1:]
    tool_call = alice.responses.create(
        model="echo", background=True, metadata=PACED, tools=[{"type": "code_interpreter", "container": {
            "type": "auto"}}], input=script(python_call("print(6 * 7)"), final("Python says {tool_output}"))).id
    _wait_for_output(alice, cancelled)
    alice.responses.cancel(cancelled)

    with alice.responses.connect() as connection:
        # About 5 s of reasoning: the steer, sent at its first delta, must come before its end
        # even on a loaded 2-core machine (after the end it would go to a successor instead).
        connection.response.create(model="echo", input=reasoning_and_answer("Slowly now. " * 60, "First."),
                                   metadata={"echo_token_delay_ms": "30"})
        events = read_until(connection, lambda es: es[-1]["type"] == "response.reasoning_text.delta")
        steered = events[0]["response"]["id"]
        connection.response.steer(previous_response_id=steered, input="Talk about tea instead.")
        events += read_until(connection, ended(2))

    assert wait_for_status(alice, cancelled, {"cancelled"}).status == "cancelled"
    for response_id in streaming:
        done = wait_for_status(alice, response_id, {"completed", "failed", "incomplete", "cancelled"})
        assert (done.status, done.output_text) == ("completed", ANSWER), response_id
    done = wait_for_status(alice, tool_call, {"completed", "failed", "incomplete", "cancelled"})
    assert done.status == "completed" and done.output_text.startswith("Python says 42")
    assert of_response(events, steered)[-1]["response"]["incomplete_details"] == {"reason": "steered"}
    assert events[-1]["type"] == "response.completed" and "tea" in events[-1]["response"]["output"][-1][
        "content"][0]["text"]

    for response_id in [cancelled, *streaming, tool_call, steered]:
        replayed = sse_replay(alice, response_id)
        assert_dense(replayed)
        assert [event["type"] in TERMINAL_EVENTS for event in replayed].count(True) == 1, response_id
        assert replayed[-1]["type"] in TERMINAL_EVENTS


def _wait_for_output(client: openai.OpenAI, response_id: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = client.responses.retrieve(response_id)
        if response.output_text:
            assert response.status == "in_progress"
            return
        time.sleep(0.05)
    raise AssertionError(f"{response_id} wrote no output text within {timeout} s")
