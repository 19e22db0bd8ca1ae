"""Deferred completion windows on the live stack: workers take a deferred response only
when no interactive one waits, and a deferred one still ends inside its window under
constant interactive load (a "2h" window is 20 s here, promoted 10 s before its end)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import openai
import pytest
from django.test import override_settings

from tests.helpers import wait_for_status, wait_until
from tests.live.stack import STACK_ENV

pytestmark = pytest.mark.core

DEFERRED = {"completion_window": "2h"}
# About 20 s for SLOW_INPUT: longer than creating the responses takes on a crowded CI
# machine; the test cancels them once the others wait.
SLOW = {"echo_token_delay_ms": "400"}
SLOW_INPUT = "Take your time with this one please. " * 6
WORKER_THREADS = 16


def rows(ids: list[str]) -> list:
    from responses_app.models import Response

    by_id = Response.objects.in_bulk(ids)
    return [by_id[pk] for pk in ids]


def test_interactive_responses_created_while_deferred_ones_wait_are_served_first(carol: openai.OpenAI):
    busy = [carol.responses.create(model="echo", input=SLOW_INPUT, background=True, metadata=SLOW).id
            for _ in range(WORKER_THREADS)]
    wait_until(lambda: all(r.status == "in_progress" for r in rows(busy)), timeout=20)
    # Created first, and released to the broker first (the beat's dispatcher waits for a
    # free worker thread; this test dispatches at once): in order, they would be served first.
    waiting = [carol.responses.create(model="echo", input="Deferred job", background=True,
                                      background_options=DEFERRED).id for _ in range(3)]
    from responses_app.dispatch.deferred import dispatch_deferred

    with override_settings(DEFERRED_PROMOTE_BEFORE_S=float(STACK_ENV["DEFERRED_PROMOTE_BEFORE_S"])):
        dispatch_deferred()
    assert all(r.deferred_state == "released" for r in rows(waiting))
    interactive = [carol.responses.create(model="echo", input="Interactive", background=True).id for _ in range(6)]
    assert all(r.status == "in_progress" for r in rows(busy))  # still: the others had to wait
    for response_id in busy:
        carol.responses.cancel(response_id)  # the worker threads free up at once

    for response_id in interactive + waiting:
        wait_for_status(carol, response_id, {"completed"}, timeout=30)
    first_deferred = min(r.started_at for r in rows(waiting))
    assert all(r.started_at < first_deferred for r in rows(interactive))
    assert all(r.completed_at < r.deadline_at for r in rows(waiting))
    assert all(r.deferred_state == "released" for r in rows(waiting))  # none needed promoting


def test_a_deferred_response_finishes_inside_its_window_under_constant_interactive_load(carol: openai.OpenAI):
    stop = threading.Event()
    load: list[str] = []

    def keep_the_queue_full() -> None:
        while not stop.is_set():
            active = sum(r.status in ("queued", "in_progress") for r in rows(load[-80:]))
            for _ in range(max(0, 2 * WORKER_THREADS - active)):
                load.append(carol.responses.create(model="echo", input=SLOW_INPUT, background=True,
                                                   metadata={"echo_token_delay_ms": "15"}).id)
            time.sleep(0.2)

    loader = threading.Thread(target=keep_the_queue_full, daemon=True)
    loader.start()
    try:
        time.sleep(2)
        [job] = rows([carol.responses.create(model="echo", input="Deferred under load", background=True,
                                             background_options=DEFERRED).id])
        done = wait_for_status(carol, job.id, {"completed"}, timeout=40)
    finally:
        stop.set()
        loader.join(timeout=30)
    [job] = rows([done.id])
    assert job.deferred_state == "promoted"
    assert job.started_at >= job.deadline_at - timedelta(seconds=10.5)  # the load held it back until promotion
    assert job.completed_at <= job.deadline_at
    for response_id in load:
        wait_for_status(carol, response_id, {"completed"}, timeout=60)


@pytest.mark.parametrize(("options", "extra", "param"), [
    ({"completion_window": "2h"}, {"background": False}, "background_options.completion_window"),
    ({"completion_window": "8h"}, {"stream": True, "background": True}, "background_options.completion_window"),
    ({"completion_window": "1h"}, {"background": True}, "background_options.completion_window"),
    ({"completion_window": "2h", "continuation_id": 7}, {"background": True}, "background_options.continuation_id"),
    ({"priority": "high"}, {"background": True}, "background_options.priority"),
])
def test_bad_background_options_are_refused(carol: openai.OpenAI, options, extra, param):
    with pytest.raises(openai.BadRequestError) as raised:
        carol.responses.create(model="echo", input="x", background_options=options, **extra)
    assert raised.value.param == param


def test_soonest_is_the_ordinary_behaviour(carol: openai.OpenAI):
    response = carol.responses.create(model="echo", input="Now", background=True,
                                      background_options={"completion_window": "soonest"})
    assert wait_for_status(carol, response.id, {"completed"}).output_text == "You said: Now"
