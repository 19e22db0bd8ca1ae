"""Over HTTP, with the openai SDK: the terminal event of every way a response can end
carries exactly the Response object that GET /v1/responses/{id} answers afterwards."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.helpers import events_of, reasoning_and_answer, wait_until

pytestmark = pytest.mark.core

SLOW = {"echo_token_delay_ms": "40"}


def assert_terminal_event_equals_get(client: Any, response_id: str, status: str) -> dict[str, Any]:
    terminal = events_of(client.responses.retrieve(response_id, stream=True))[-1]
    assert terminal["response"]["status"] == status
    assert terminal["response"] == client.responses.retrieve(response_id).to_dict()
    return terminal["response"]


@pytest.mark.parametrize("request_body, status", [
    pytest.param({"input": "Hello"}, "completed", id="completed"),
    pytest.param({"input": reasoning_and_answer("a " * 40, "b"), "max_output_tokens": 16}, "incomplete",
                 id="incomplete-max-output-tokens"),
    pytest.param({"input": "<|channel|>final<|message|>partial<|start|>oops"}, "failed", id="failed-not-harmony"),
    pytest.param({"input": "crash", "metadata": {"echo_die_after_tokens": "5"}}, "failed", id="failed-engine-died"),
])
def test_a_finished_response_announces_what_get_returns(alice, request_body, status):
    response = alice.responses.create(model="echo", **request_body)
    assert response.status == status
    assert_terminal_event_equals_get(alice, response.id, status)


def test_a_background_response_cancelled_while_running_announces_what_get_returns(alice):
    response = alice.responses.create(model="echo", input="Tell me a long story.", background=True, metadata=SLOW)
    wait_until(lambda: alice.responses.retrieve(response.id).status == "in_progress")
    time.sleep(0.3)  # some output first
    assert alice.responses.cancel(response.id).status == "cancelled"
    announced = assert_terminal_event_equals_get(alice, response.id, "cancelled")
    assert announced["output"][-1]["status"] == "incomplete"
