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


@pytest.mark.parametrize("fault", harness.BATCH_FAULTS)
def test_a_batch_completes_through_a_fault_with_each_request_run_once(fault, fault_stack, expected_text):
    harness.prepare(fault_stack, fault)
    problems = harness.batch_trial(fault_stack, fault, expected_text)
    assert not problems, "; ".join(problems)
