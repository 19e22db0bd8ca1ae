"""Dispatch across two echo worker nodes (NODE_ID node1-<port> and node2-<port>) that share
PostgreSQL and Redis: a conversation's turns stay on the node that holds its prefix; when
that node stalls, its turn waits what the prefix saves and then runs on the other; when it
dies, its next turns go to the other and complete."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator

import pytest
import redis

from tests.faults import harness
from tests.helpers import wait_until

TURN = "Another paragraph of the session's growing context, about the harbour, its boats and its nets. " * 12


@pytest.fixture(scope="module")
def fleet_stack() -> Iterator[harness.FaultStack]:
    stack = harness.FaultStack("dispatch")
    stack.env["FLEET_NODE_TTL_S"] = "3"
    try:
        stack.up(("web", "worker", "worker2", "beat"))
        yield stack
    finally:
        stack.down()


def node_of(stack: harness.FaultStack, response_id: str) -> str:
    return stack.sql("SELECT node FROM responses_app_response WHERE id = %s", response_id)[0][0]


def both_nodes_beat(stack: harness.FaultStack) -> bool:
    with redis.Redis.from_url(stack.redis_url) as client:
        nodes = {key.decode().split("|", 1)[0] for key in client.hkeys("fleet:processes")}
    return {f"node1-{stack.port}", f"node2-{stack.port}"} <= nodes


def test_each_sessions_turns_stay_on_its_node_and_move_when_the_node_dies(fleet_stack):
    client = fleet_stack.client()
    wait_until(lambda: both_nodes_beat(fleet_stack), timeout=30)
    sessions = []
    for session in range(6):
        first = client.responses.create(model="echo", input=f"Session {session}. {TURN}")
        sessions.append([first])
    for turn in range(2):
        for chain in sessions:
            chain.append(client.responses.create(model="echo", input=f"Turn {turn}. {TURN}",
                                                 previous_response_id=chain[-1].id))

    homes = {}
    for chain in sessions:
        nodes = [node_of(fleet_stack, response.id) for response in chain]
        assert len(set(nodes)) == 1, nodes  # every turn on the node of the first
        homes[chain[0].id] = nodes[0]
        for earlier, later in zip(chain, chain[1:], strict=False):
            # The whole of the earlier turn's prompt is in the node's cache, but its last token.
            cached = later.usage.input_tokens_details.cached_tokens
            assert cached >= earlier.usage.input_tokens - 16, (cached, earlier.usage.input_tokens)
    assert set(homes.values()) == {f"node1-{fleet_stack.port}", f"node2-{fleet_stack.port}"}

    fleet_stack.kill("worker")  # node1 is lost, with its caches
    moved = [chain for chain in sessions if homes[chain[0].id] == f"node1-{fleet_stack.port}"]
    for chain in moved:
        answer = client.responses.create(model="echo", input=f"After the loss. {TURN}",
                                         previous_response_id=chain[-1].id)
        assert answer.status == "completed"
        assert node_of(fleet_stack, answer.id) == f"node2-{fleet_stack.port}"
        # node2 never held this session: only the system message that every prompt opens with.
        assert answer.usage.input_tokens_details.cached_tokens < chain[-1].usage.input_tokens / 4


def test_a_turn_whose_node_stalls_spills_to_the_other_after_its_wait(fleet_stack):
    """A node that stops taking work (SIGSTOP: its heartbeat still fresh for a moment) keeps
    its chain's next turn only as long as the prefix would save; then the other node runs it."""
    fleet_stack.up(("web", "worker", "worker2", "beat"))
    client = fleet_stack.client()
    wait_until(lambda: both_nodes_beat(fleet_stack), timeout=30)
    first = client.responses.create(model="echo", input=f"A session that will wait. {TURN}")
    home = node_of(fleet_stack, first.id)
    process = fleet_stack.processes["worker" if home == f"node1-{fleet_stack.port}" else "worker2"]
    with redis.Redis.from_url(fleet_stack.redis_url) as client_redis:
        spilled_before = spilled(client_redis, home)
        os.killpg(process.pid, signal.SIGSTOP)
        try:
            answer = client.responses.create(model="echo", input=f"Go on. {TURN}", previous_response_id=first.id)
        finally:
            os.killpg(process.pid, signal.SIGCONT)
        assert answer.status == "completed"
        assert node_of(fleet_stack, answer.id) != home
        assert spilled(client_redis, home) == spilled_before + 1


def spilled(client: redis.Redis, node: str) -> int:
    return int(client.hget("fleet:decisions", json.dumps(["echo", node, "spilled"])) or 0)
