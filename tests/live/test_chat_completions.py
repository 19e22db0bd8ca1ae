"""Chat Completions against the live stack (Daphne, the Celery worker): a client that hangs
up mid-stream cancels the generation of every choice, and a worker killed mid-answer loses
nothing of the stream."""

from __future__ import annotations

import signal
import time
import uuid

import pytest

from tests.helpers import reasoning_and_answer, take

pytestmark = pytest.mark.core

LONG_ANSWER = reasoning_and_answer("Let me think.", " ".join(f"word{n}" for n in range(200)))


@pytest.mark.parametrize("n", [1, 2])
def test_a_client_that_hangs_up_cancels_every_choice(alice, db_access, n: int):
    from responses_app.models import Response

    marker = uuid.uuid4().hex
    stream = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": LONG_ANSWER}],
                                           n=n, stream=True, metadata={"echo_token_delay_ms": "100", "test": marker})
    take(stream, 4 * n)
    rows = Response.objects.filter(request__metadata__test=marker)
    # Unstored: a row is purged soon after its end, so its end is watched closely.
    seen: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while len(seen) < n and time.monotonic() < deadline:
        seen |= {pk: status for pk, status in rows.values_list("pk", "status") if status not in ("queued",
                                                                                                   "in_progress")}
        time.sleep(0.05)
    assert len(seen) == n and set(seen.values()) == {"cancelled"}


def test_a_killed_workers_completion_is_continued_and_its_stream_goes_on_to_the_whole_answer(alice, stack):
    messages = [{"role": "user", "content": reasoning_and_answer("Let me think.", " ".join(
        f"word{n}" for n in range(40)))}]
    expected = alice.chat.completions.create(model="echo", messages=messages).choices[0].message
    stream = alice.chat.completions.create(model="echo", messages=messages, stream=True, metadata={
        "echo_token_delay_ms": "100"}, stream_options={"include_usage": True})
    chunks, killed = [], None
    for chunk in stream:
        chunks.append(chunk)
        if chunk.choices and chunk.choices[0].delta.content and killed is None:
            stack.kill("worker", signal.SIGKILL)  # mid-answer, its reasoning whole
            killed = time.monotonic()
            stack.start("worker")  # whose reaper re-queues the completion's response
    assert killed is not None and time.monotonic() - killed < 60
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    # The same stream, never reconnected: nothing repeated, nothing lost.
    assert "".join(delta.content or "" for delta in deltas) == expected.content
    assert "".join(delta.model_extra.get("reasoning") or "" for delta in deltas) == (
        expected.model_extra["reasoning"])
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "stop"
    assert chunks[-1].usage is not None and not chunks[-1].choices
