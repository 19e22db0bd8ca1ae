"""The fault suite: real processes on a PostgreSQL and a Redis of their own, a fault
injected mid-run, and every response, stream and event checked afterwards (harness.py).

Each fault runs FAULT_TRIALS trials here (2 unless set); scripts/fault_trials.py runs
more and prints the table that docs/faults.md shows.
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
        if fault in harness.LOSSLESS_FAULTS:
            assert result.completed == result.responses
        assert (result.lost_events, result.duplicated_events) == (0, 0)
        harness.prepare(fault_stack, fault)
        assert harness.stack_serves(fault_stack), f"the stack does not serve after trial {trial} of {fault}"


# A worker process whose engine loop carries 200 responses at once, killed under them.
CROWD = 200


def test_a_worker_killed_with_200_responses_on_its_loop_loses_none(crowded_stack):
    expected = harness.expected_text(crowded_stack)
    # 60 ms a token: each answers for about 8 s, so that all 200 run when the worker dies.
    result = harness.run_trial(crowded_stack, "worker SIGKILL", harness.kill_worker, count=CROWD, followed=4,
                               expected=expected, token_delay_ms=60, clients=16, running=CROWD)
    assert result.ok, harness.describe(result)
    assert result.completed == result.responses == CROWD  # the lost worker's were continued
    assert (result.lost_events, result.duplicated_events) == (0, 0)
    assert harness.stack_serves(crowded_stack)


# Two worker nodes (each with its own containers folder) share the queue and carry this
# many responses between them; one is killed for good under them.
ACROSS_TWO_NODES = 120


def test_a_node_killed_with_responses_across_two_nodes_loses_none(crowded_stack):
    crowded_stack.up(("web", "worker", "worker2", "beat"))
    expected = harness.expected_text(crowded_stack)
    nodes: list[int] = []

    def kill_node_a(stack: harness.FaultStack, ids: list[str]) -> list[str]:
        # Each claim's lease owner is host:pid:thread:nonce; the pid tells the node.
        nodes.append(stack.sql("SELECT count(DISTINCT split_part(lease_owner, ':', 2)) FROM responses_app_response "
                               "WHERE id = ANY(%s) AND status = 'in_progress'", ids)[0][0])
        return harness.kill_one_of_two_workers(stack, ids)

    result = harness.run_trial(crowded_stack, "1 of 2 workers SIGKILL", kill_node_a, count=ACROSS_TWO_NODES,
                               followed=4, expected=expected, token_delay_ms=60, clients=16,
                               running=ACROSS_TWO_NODES)
    assert nodes == [2], "the responses did not run on both nodes when one was killed"
    assert result.ok, harness.describe(result)
    assert result.completed == result.responses == ACROSS_TWO_NODES
    assert (result.lost_events, result.duplicated_events) == (0, 0)


@pytest.mark.parametrize("fault", harness.BATCH_FAULTS)
def test_a_batch_completes_through_a_fault_with_each_request_run_once(fault, fault_stack, expected_text):
    harness.prepare(fault_stack, fault)
    problems = harness.batch_trial(fault_stack, fault, expected_text)
    assert not problems, "; ".join(problems)


@pytest.mark.parametrize("fault", harness.INGEST_FAULTS)
def test_vector_store_files_are_each_indexed_once_through_a_fault(fault, fault_stack):
    harness.prepare(fault_stack, fault)
    problems = harness.ingestion_trial(fault_stack, fault)
    assert not problems, "; ".join(problems)
