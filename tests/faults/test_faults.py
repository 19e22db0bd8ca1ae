"""The fault suite: real processes on a PostgreSQL and a Redis of their own, a fault
injected mid-run, and every response, stream and event checked afterwards (harness.py).

Each fault runs FAULT_TRIALS trials here (2 unless set); scripts/fault_trials.py runs
more and prints the table that the README shows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.faults import harness

TRIALS = int(os.environ.get("FAULT_TRIALS", "2"))
# 12 responses on 8 task threads: some run when the fault hits, some still wait in the queue.
RESPONSES, FOLLOWED = 12, 4


@pytest.fixture(scope="module")
def fault_stack() -> Iterator[harness.FaultStack]:
    stack = harness.FaultStack("faults", worker_concurrency=8)
    try:
        stack.up()
        yield stack
    finally:
        stack.down()


@pytest.fixture(scope="module")
def expected_text(fault_stack: harness.FaultStack) -> str:
    return harness.expected_text(fault_stack)


@pytest.mark.parametrize("fault", list(harness.FAULTS))
def test_every_response_and_stream_ends_with_dense_events_after(fault, fault_stack, expected_text):
    for trial in range(TRIALS):
        harness.prepare(fault_stack, fault)
        result = harness.run_trial(fault_stack, fault, harness.FAULTS[fault], count=RESPONSES, followed=FOLLOWED,
                                   expected=expected_text)
        assert result.ok, f"trial {trial}: {harness.describe(result)}"
        assert result.ended == result.responses
        assert (result.lost_events, result.duplicated_events) == (0, 0)
        harness.prepare(fault_stack, fault)
        assert harness.stack_serves(fault_stack), f"the stack does not serve after trial {trial} of {fault}"


# A worker process whose engine loop carries 200 responses at once, killed under them.
CROWD = 200


def test_a_worker_killed_with_200_responses_on_its_loop_ends_each_once(crowded_stack):
    expected = harness.expected_text(crowded_stack)
    # 60 ms a token: each answers for about 8 s, so that all 200 run when the worker dies.
    result = harness.run_trial(crowded_stack, "worker SIGKILL", harness.kill_worker, count=CROWD, followed=4,
                               expected=expected, token_delay_ms=60, clients=16, running=CROWD)
    assert result.ok, harness.describe(result)
    assert result.ended == result.responses == CROWD
    assert (result.lost_events, result.duplicated_events) == (0, 0)
    assert harness.stack_serves(crowded_stack)


@pytest.mark.parametrize("fault", harness.BATCH_FAULTS)
def test_a_batch_completes_through_a_fault_with_each_request_run_once(fault, fault_stack, expected_text):
    harness.prepare(fault_stack, fault)
    problems = harness.batch_trial(fault_stack, fault, expected_text)
    assert not problems, "; ".join(problems)
