"""Dispatch across nodes (dispatch/placement.py) over the fleet's state in Redis
(dispatch/fleet.py): heartbeats of made-up nodes on a model queue of the test's own, so
that no live worker's heartbeat takes part."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest
from django.test import override_settings

from responses_app.dispatch import broker, fleet, placement
from responses_app.models import Response, ResponseStatus
from responses_app.worker import membership

RATE = 30_000.0  # FLEET_PREFILL_TOKENS_PER_S


@pytest.fixture
def queue() -> Iterator[str]:
    """A model queue of the test's own; its nodes' heartbeats and waiting sets go with it."""
    name = f"model.fleet-{uuid.uuid4().hex[:8]}"
    processes: list[str] = []
    with override_settings(DISPATCH="prefix", FLEET_PREFILL_TOKENS_PER_S=RATE, FLEET_MAX_WAIT_S=10,
                           FLEET_NODE_TTL_S=5):
        yield name
    client = fleet.shared_client()
    for process in client.hkeys(fleet.PROCESSES_KEY):
        if process.decode().startswith(name):
            processes.append(process.decode())
    if processes:
        client.hdel(fleet.PROCESSES_KEY, *processes)
    for pattern in (f"fleet:waiting:{name}@*", f"fleet:booked:{name}@*"):
        for key in client.scan_iter(pattern):
            client.delete(key)
    counted = [field for field in client.hkeys(fleet.DECISIONS_KEY) if name in field.decode()]
    if counted:
        client.hdel(fleet.DECISIONS_KEY, *counted)


def node(queue: str, name: str, *, running: int = 0, slots: int = 8, backlog_s: float = 0.0,
         age_s: float = 0.0) -> fleet.Heartbeat:
    """Write a heartbeat of node ``name``'s one process on ``queue``."""
    heartbeat = fleet.Heartbeat(node=name, worker=f"worker@{name}", queues=(queue,), running=running, slots=slots,
                                slot_pool=name, prefill_backlog_s=backlog_s, at=time.time() - age_s)
    fleet.beat(f"{queue}|{name}", heartbeat)
    return heartbeat


def place(response: Response, queue: str, hint: placement.Hint | None = None) -> placement.Placement:
    """As task_queue.send places a response: by the keys its prefix may be known by."""
    return placement.place(queue, placement.affinity_keys(response, hint)[0], hint)


def sent_to_a(queue: str, response_id: str, prefill_s: float) -> None:
    fleet.record_dispatch(response_id, [], f"{queue}@a", prefill_s=prefill_s, wait_s=10,
                          decision=(queue, "a", "preferred"))


def response(tenant_id: int = 1, **fields: object) -> Response:
    request = {"prompt_cache_key": fields.pop("prompt_cache_key")} if "prompt_cache_key" in fields else {}
    return Response(tenant_id=tenant_id, model="echo", request=request, **fields)


def ended_on(name: str, earlier: Response, tokens: int, hint: placement.Hint | None = None) -> None:
    """``earlier`` ran on node ``name`` and left ``tokens`` in its cache (as a worker's end does)."""
    fleet.remember(placement.affinity_keys(earlier, hint)[1], name, tokens)


def test_a_chains_next_turn_goes_to_the_node_that_ran_the_one_before_and_waits_what_its_prefix_saves(queue):
    node(queue, "a")
    node(queue, "b")
    first = response()
    ended_on("b", first, 45_000)

    where = place(response(previous_response_id=first.pk), queue, placement.Hint(2_000, None))

    assert (where.queue, where.node, where.decision) == (f"{queue}@b", "b", "preferred")
    assert where.wait_s == pytest.approx(45_000 / RATE)
    assert where.prefill_s == pytest.approx(2_000 / RATE)  # only the new input


def test_the_preferred_node_loses_only_when_its_backlog_costs_more_than_its_prefix_saves(queue):
    first = response()
    ended_on("a", first, 30_000)  # saves 1 s of prefill on a
    node(queue, "b")

    node(queue, "a", backlog_s=0.8)
    assert place(response(previous_response_id=first.pk), queue).decision == "preferred"

    node(queue, "a", backlog_s=1.5)
    where = place(response(previous_response_id=first.pk), queue)
    assert (where.node, where.decision, where.wait_s) == ("b", "moved", placement.MIN_WAIT_S)
    assert where.prefill_s == pytest.approx(1.0)  # b computes the whole prefix


def test_a_full_node_is_never_chosen_even_for_its_prefix(queue):
    first = response()
    ended_on("a", first, 60_000)
    node(queue, "a", running=8, slots=8)
    node(queue, "b", running=7, slots=8)

    where = place(response(previous_response_id=first.pk), queue)
    assert (where.node, where.decision) == ("b", "moved")

    node(queue, "b", running=8, slots=8)
    assert place(response(previous_response_id=first.pk), queue) == placement.Placement(
        queue, None, "model_queue")


def test_responses_waiting_for_a_node_count_as_its_load(queue):
    node(queue, "a")
    node(queue, "b")
    sent_to_a(queue, "resp_waits_on_a", prefill_s=2.0)

    where = place(response(), queue, placement.Hint(1_000, None))

    assert (where.node, where.decision) == ("b", "balanced")
    nodes = fleet.live_nodes(queue)
    assert (nodes["a"].waiting, nodes["b"].waiting) == (1, 0)
    assert nodes["a"].busy_s == pytest.approx(2.0, abs=0.1) and nodes["b"].busy_s == 0
    fleet.claimed("resp_waits_on_a")
    # Claimed, it waits no more; its prefill stays booked until it has run.
    assert fleet.live_nodes(queue)["a"].waiting == 0
    assert fleet.live_nodes(queue)["a"].busy_s == pytest.approx(2.0, abs=0.1)


def test_bookings_on_a_node_queue_up_one_after_another(queue):
    node(queue, "a", backlog_s=0.5)
    for index in range(3):
        sent_to_a(queue, f"resp_booked_{index}", prefill_s=1.0)
    assert fleet.live_nodes(queue)["a"].busy_s == pytest.approx(3.0, abs=0.1)
    node(queue, "a", backlog_s=4.0)  # the engine knows better: more than was booked
    assert fleet.live_nodes(queue)["a"].busy_s == 4.0


def test_prompt_cache_key_groups_unrelated_requests_of_one_tenant_only(queue):
    node(queue, "a")
    node(queue, "b", backlog_s=0.2)
    key = f"agent-{uuid.uuid4().hex}"
    first = response(prompt_cache_key=key)
    assert place(first, queue).decision == "balanced"
    ended_on("b", first, 20_000)

    where = place(response(prompt_cache_key=key), queue)
    assert (where.node, where.decision) == ("b", "preferred")
    other_tenant = place(response(tenant_id=2, prompt_cache_key=key), queue)
    assert (other_tenant.node, other_tenant.decision) == ("a", "balanced")


def test_the_same_leading_input_of_one_tenant_is_a_prefix_too():
    items = [{"type": "message", "role": "developer", "content": "You are Codex. " * 50}]
    first, again = response(), response()
    hint = placement.hint_for(first, "instructions", items)
    assert placement.hint_for(again, "instructions", [*items, {"type": "message", "role": "user"}]).leading_key == (
        hint.leading_key)
    assert placement.hint_for(response(tenant_id=2), "instructions", items).leading_key != hint.leading_key
    assert placement.hint_for(again, "other instructions", items).leading_key != hint.leading_key
    assert placement.hint_for(again, "instructions", []).leading_key is None


def test_a_node_that_leaves_is_forgotten_and_its_chains_go_elsewhere(queue):
    first = response()
    ended_on("a", first, 50_000)
    node(queue, "a", age_s=6)  # its last heartbeat is older than FLEET_NODE_TTL_S
    node(queue, "b")

    where = place(response(previous_response_id=first.pk), queue)

    assert (where.node, where.decision) == ("b", "balanced")
    assert set(fleet.live_nodes(queue)) == {"b"}
    node(queue, "a", age_s=fleet.FORGET_AFTER_S + 1)  # long dead: its entry is deleted
    fleet.live_nodes(queue)
    assert f"{queue}|a" not in {key.decode() for key in fleet.shared_client().hkeys(fleet.PROCESSES_KEY)}


def test_with_no_live_node_or_by_model_queue_every_response_goes_to_the_models_queue(queue):
    assert place(response(), queue) == placement.Placement(queue, None, "model_queue")
    node(queue, "a")
    with override_settings(DISPATCH="model_queue"):
        assert place(response(), queue) == placement.Placement(queue, None, "model_queue")


def test_least_loaded_dispatch_ignores_prefixes(queue):
    first = response()
    ended_on("a", first, 60_000)
    node(queue, "a", running=3)
    node(queue, "b", running=1)
    with override_settings(DISPATCH="least_loaded"):
        where = place(response(previous_response_id=first.pk), queue)
    assert (where.node, where.decision) == ("b", "balanced")


def test_processes_of_one_node_add_their_load_and_share_a_node_files_slots(queue):
    shared = fleet.Heartbeat(node="gpu0", worker="w1@gpu0", queues=(queue,), running=3, slots=16,
                             slot_pool="/run/node/admission", prefill_backlog_s=0.5)
    fleet.beat(f"{queue}|gpu0-1", shared)
    fleet.beat(f"{queue}|gpu0-2", replace(shared, worker="w2@gpu0", running=5, prefill_backlog_s=0.2))

    load = fleet.live_nodes(queue)["gpu0"]

    assert (load.running, load.slots, load.prefill_backlog_s) == (8, 16, 0.5)
    assert sorted(load.workers) == ["w1@gpu0", "w2@gpu0"]


def test_a_response_spills_to_its_models_queue_once_its_wait_is_over(queue, db_access):
    from responses_app.models import Tenant
    from tests.helpers import new_tenant

    tenant = Tenant.objects.get(name=new_tenant())
    registry = {"fleet-test": {"engine": "echo", "queue": queue}}
    waiting = Response.objects.create(tenant=tenant, model="fleet-test", status=ResponseStatus.QUEUED)
    taken = Response.objects.create(tenant=tenant, model="fleet-test", status=ResponseStatus.IN_PROGRESS)
    # Long waits, and the spill passes asked as of a later moment: a live worker's own pass
    # (on this Redis) takes only what is due now.
    for response in (waiting, taken):
        fleet.record_dispatch(response.pk, [], f"{queue}@a", prefill_s=1.0, wait_s=100,
                              decision=(queue, "a", "preferred"))
    assert not {waiting.pk, taken.pk} & {rid for _, rid in fleet.due_spills(now=time.time())}
    due = fleet.due_spills(now=time.time() + 200)
    assert {("a", waiting.pk), ("a", taken.pk)} <= set(due)
    assert not {waiting.pk, taken.pk} & {rid for _, rid in fleet.due_spills(now=time.time() + 200)}  # once each
    try:
        with override_settings(MODEL_REGISTRY=registry):
            assert membership.spill(waiting.pk, "a") is True
            assert membership.spill(taken.pk, "a") is False  # its node claimed it
            assert broker.queue_depths([queue])[queue] == 1
        waiting.refresh_from_db()
        assert waiting.enqueued_at is not None and waiting.task_id
        assert fleet.shared_client().zcard(f"fleet:waiting:{queue}@a") == 0
    finally:
        fleet.shared_client().delete(queue)


def test_send_puts_an_interactive_response_on_its_nodes_queue_and_a_deferred_one_on_the_models(queue):
    from responses_app.dispatch import task_queue

    node(queue, "a")
    interactive, deferred = Response(tenant_id=1, model="fleet-test"), Response(tenant_id=1, model="fleet-test")
    try:
        with override_settings(MODEL_REGISTRY={"fleet-test": {"engine": "echo", "queue": queue}}):
            task_queue.send(interactive, "task-1", task_queue.INTERACTIVE_PRIORITY)
            task_queue.send(deferred, "task-2", task_queue.DEFERRED_PRIORITY)
            assert broker.queue_depths([f"{queue}@a", queue]) == {f"{queue}@a": 1, queue: 1}
        assert fleet.live_nodes(queue)["a"].waiting == 1
        assert fleet.claimed(interactive.pk) == [f"resp:{interactive.pk}"]
        assert fleet.claimed(deferred.pk) == [f"resp:{deferred.pk}"]  # remembered where it runs, all the same
    finally:
        for key in fleet.shared_client().scan_iter(f"{queue}*"):  # the queues' lists, one per priority
            fleet.shared_client().delete(key)
