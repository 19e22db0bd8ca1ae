"""A conversation survives the loss of the worker and the web process mid-turn."""

from __future__ import annotations

import signal
from typing import Any

import openai
import pytest

from tests.helpers import wait_for_status, wait_until

pytestmark = pytest.mark.core
SLOW = {"echo_token_delay_ms": "40"}


def items_of(client: openai.OpenAI, conversation_id: str) -> list[dict[str, Any]]:
    return [item.to_dict() for item in client.conversations.items.list(conversation_id, order="asc")]


def test_a_worker_lost_mid_turn_frees_the_conversation_and_it_works_after_restarts(alice, stack):
    conversation = alice.conversations.create()
    before = alice.responses.create(model="echo", input="before", conversation=conversation.id)
    running = alice.responses.create(model="echo", input="lost " * 100, conversation=conversation.id,
                                     background=True, metadata=SLOW)
    wait_until(lambda: alice.responses.retrieve(running.id).output)
    try:
        stack.kill("worker", signal.SIGKILL)
        stack.kill("web", signal.SIGKILL)
        stack.start("web")
        stack.start("worker")
        # The reaper re-queues the turn it lost and the new worker continues it (it had
        # streamed output): the conversation gets the whole turn, and takes the next one.
        continued = wait_for_status(alice, running.id, {"completed"})
    finally:
        stack.ensure_running()
    assert continued.output_text == alice.responses.create(model="echo", input="lost " * 100).output_text
    turns = len(items_of(alice, conversation.id))
    assert turns == 1 + len(before.output) + 1 + len(continued.output)
    after = alice.responses.create(model="echo", input="after", conversation=conversation.id)
    assert after.status == "completed" and len(items_of(alice, conversation.id)) == turns + 1 + len(after.output)
