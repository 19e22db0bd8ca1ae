"""Batches of several responses committed together (stream/store.save_group, through a
worker process's committer thread, worker/group_commit.py): each response gets what a
commit of its own would give it, and one response's failure stays its own."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from responses_app.dispatch import task_queue
from responses_app.harmony.parser import ContentDelta, MessageStarted
from responses_app.models import Response, ResponseEvent, ResponseStatus
from responses_app.services.create import create_response
from responses_app.stream import store
from responses_app.stream.builder import EventBuilder
from responses_app.stream.sse import event_json
from responses_app.stream.store import Batch, LeaseLost, save_group
from responses_app.tenancy.api_keys import create_api_key
from responses_app.validation.create import parse_create_request
from responses_app.worker import group_commit
from responses_app.worker.claim import claim

# Committed rows: the committer thread has a connection of its own.
pytestmark = [pytest.mark.usefixtures("db_access"), pytest.mark.core]
OWNER = "test-group-worker"


@pytest.fixture(autouse=True)
def no_broker(monkeypatch) -> None:
    monkeypatch.setattr(task_queue, "send", lambda response, task_id, priority=0, **_: None)


def batch(words: int) -> tuple[Batch, EventBuilder]:
    """A claimed response's next batch: in_progress, a message and ``words`` deltas."""
    tenant = create_api_key("group")[0].tenant
    response = claim(create_response(tenant, parse_create_request({"model": "echo", "input": "hi"})).pk, OWNER)
    builder = EventBuilder(response, next_sequence_number=1)
    builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    builder.apply(MessageStarted(kind="message", recipient=None, name=None))
    for n in range(words):
        builder.apply(ContentDelta(text=f"w{n} "))
    events, items = builder.drain()
    return Batch(response, OWNER, events, items), builder


def committed_sequence(response: Response) -> list[int]:
    return list(ResponseEvent.objects.filter(response=response).order_by("sequence_number")
                .values_list("sequence_number", flat=True))


def test_one_transaction_gives_each_response_its_cancel_flag_and_writes_none_of_a_lost_lease():
    plain, cancelled, lost = batch(3)[0], batch(2)[0], batch(4)[0]
    Response.objects.filter(pk=cancelled.response.pk).update(cancel_requested=True)
    Response.objects.filter(pk=lost.response.pk).update(lease_owner="someone-else")

    renewed = save_group([plain, cancelled, lost])

    assert renewed == {plain.response.pk: False, cancelled.response.pk: True}
    for held in (plain, cancelled):
        row = Response.objects.get(pk=held.response.pk)
        assert row.last_sequence_number == held.events[-1]["sequence_number"] == held.response.last_sequence_number
        assert committed_sequence(row) == list(range(held.events[-1]["sequence_number"] + 1))
        assert row.output_items.get().data["content"][0]["text"] == held.items[-1][1]["content"][0]["text"]
    assert committed_sequence(lost.response) == [0]  # only response.created, from the create
    assert Response.objects.get(pk=lost.response.pk).last_sequence_number == 0


@pytest.mark.parametrize(("words", "copy_from_rows"), [(2, store.COPY_FROM_ROWS), (100, store.COPY_FROM_ROWS),
                                                      (100, 200)])
def test_a_few_events_and_many_are_stored_alike(settings, monkeypatch, words, copy_from_rows):
    """On PostgreSQL a group of fewer than COPY_FROM_ROWS events is one statement, a larger
    one a transaction whose events go in a COPY."""
    settings.MERGE_STREAM_DELTAS = False  # a delta event per word
    monkeypatch.setattr(store, "COPY_FROM_ROWS", copy_from_rows)
    held, _ = batch(words)
    assert len(held.events) == words + 3

    assert save_group([held]) == {held.response.pk: False}

    stored = ResponseEvent.objects.filter(response=held.response, sequence_number__gte=1).order_by("sequence_number")
    assert [(row.sequence_number, row.type, row.data) for row in stored] == [
        (event["sequence_number"], event["type"], event_json(event)) for event in held.events]


def test_the_committer_hands_each_writer_its_own_result_and_a_failing_batch_fails_alone():
    good, _ = batch(2)
    duplicate, builder = batch(2)
    assert group_commit.save(duplicate) is False
    # The same sequence numbers again (as after a commit that landed unheard): that batch
    # fails the group's transaction; the committer then commits each batch on its own.
    again = Batch(duplicate.response, OWNER, duplicate.events, duplicate.items)
    lost, _ = batch(1)
    Response.objects.filter(pk=lost.response.pk).update(lease_owner="someone-else")
    first, second = group_commit._Handed([good]), group_commit._Handed([again, lost])
    group_commit.group_committer()._commit([first, second])

    assert first.outcomes.result() == [False]
    assert committed_sequence(good.response) == list(range(good.events[-1]["sequence_number"] + 1))
    failed, lost_lease = second.outcomes.result()
    assert isinstance(failed, IntegrityError) and isinstance(lost_lease, LeaseLost)


def test_a_batch_without_events_renews_the_lease_and_leaves_the_last_sequence_number():
    written, _ = batch(3)
    save_group([written])
    last = written.events[-1]["sequence_number"]
    # The writer's copy may lag the row (a commit that landed unheard): a renewal alone
    # must not take the row back to it.
    written.response.last_sequence_number = 0
    before = Response.objects.get(pk=written.response.pk).lease_expires_at
    assert save_group([Batch(written.response, OWNER, [], [])]) == {written.response.pk: False}
    row = Response.objects.get(pk=written.response.pk)
    assert row.last_sequence_number == last and row.lease_expires_at > before


def test_a_batch_that_is_not_due_to_renew_the_lease_advances_the_stream_and_leaves_the_lease(settings):
    """The writer renews its lease every LEASE_RENEW_S, not with every batch: the lease's
    column is indexed, the last sequence number is not."""
    first, builder = batch(1)
    held = save_group([first])
    before = Response.objects.get(pk=first.response.pk).lease_expires_at
    builder.apply(ContentDelta(text="more"))
    events, items = builder.drain()
    Response.objects.filter(pk=first.response.pk).update(cancel_requested=True)
    cancelled = save_group([Batch(first.response, OWNER, events, items, renew_lease=False)])
    row = Response.objects.get(pk=first.response.pk)
    assert held == {first.response.pk: False} and cancelled == {first.response.pk: True}
    assert row.last_sequence_number == events[-1]["sequence_number"] and row.lease_expires_at == before
    # Still guarded by the lease: another owner's batch writes nothing.
    builder.apply(ContentDelta(text="again"))
    events, items = builder.drain()
    assert save_group([Batch(first.response, "someone-else", events, items, renew_lease=False)]) == {}
    assert committed_sequence(first.response)[-1] == row.last_sequence_number


def test_the_writer_renews_its_lease_once_LEASE_RENEW_S_has_passed_and_counts_its_ttl_from_then(settings, monkeypatch):
    from responses_app.worker import batch_writer
    from responses_app.worker.batch_writer import BatchWriter

    clock = [500.0]
    monkeypatch.setattr(batch_writer.time, "monotonic", lambda: clock[0])
    _, builder = batch(1)
    writer = BatchWriter(builder.response, OWNER, builder, off_loop=None, loop=None, last_commit=clock[0],
                         lease_renewed=clock[0])
    assert writer.take_batch().renew_lease is False
    writer.settle(False)
    clock[0] += settings.LEASE_RENEW_S
    builder.apply(ContentDelta(text="later"))
    assert writer.take_batch().renew_lease is True
    taken = clock[0]
    clock[0] = 500.0 + settings.LEASE_TTL_S - 1  # its commit is slow: retries are bounded by the claim's lease
    assert writer._lease_nearly_out()
    writer.settle(False)
    # The lease it renewed runs from when the batch was taken (its commit's now() is later).
    assert writer.lease_renewed == taken and not writer._lease_nearly_out()
