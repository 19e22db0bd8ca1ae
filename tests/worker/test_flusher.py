"""The engine loop's flusher (worker/flusher.py): the batches of all the responses that a
worker process runs at once are committed in groups, each response's in order, with no
event lost or written twice; and the process runs no more responses at once than it has
response slots (worker/admission.py)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from responses_app.dispatch import task_queue
from responses_app.models import EventLog, Response, ResponseStatus
from responses_app.services.create import create_response
from responses_app.stream import event_log
from responses_app.tenancy.api_keys import create_api_key
from responses_app.validation.create import parse_create_request
from responses_app.worker import admission
from responses_app.worker import run as worker_run
from responses_app.worker.group_commit import GroupCommitter
from responses_app.worker.run import run_response

# Committed rows: the responses run on the engine loop, whose threads have connections of their own.
pytestmark = [pytest.mark.usefixtures("db_access"), pytest.mark.core]
RESPONSES = 40
ANSWER = ("<|channel|>analysis<|message|>Counting along.<|end|>"
          "<|start|>assistant<|channel|>final<|message|>" + " ".join(f"w{n}" for n in range(60)) + "<|return|>")


@pytest.fixture(autouse=True)
def no_broker(monkeypatch) -> None:
    monkeypatch.setattr(task_queue, "send", lambda response, task_id, priority=0, **_: None)


def create_paced(count: int) -> list[str]:
    tenant = create_api_key("flusher")[0].tenant
    body = {"model": "echo", "input": ANSWER, "background": True, "metadata": {"echo_token_delay_ms": "5"}}
    return [create_response(tenant, parse_create_request(body)).pk for _ in range(count)]


def run_all(ids: list[str]) -> None:
    def run(response_id: str) -> None:
        try:
            run_response(response_id)
        finally:
            connection.close()

    with ThreadPoolExecutor(len(ids)) as pool:
        list(pool.map(run, ids))


def test_many_responses_streaming_at_once_are_committed_in_groups_with_dense_events(monkeypatch):
    submitted: list[int] = []
    submit = GroupCommitter.submit
    monkeypatch.setattr(GroupCommitter, "submit", lambda committer, batches: (
        submitted.append(len(batches)), submit(committer, batches))[1])
    ids = create_paced(RESPONSES)

    run_all(ids)

    rows = Response.objects.filter(pk__in=ids)
    assert {row.status for row in rows} == {ResponseStatus.COMPLETED}
    words = " ".join(f"w{n}" for n in range(60))
    for row in rows:
        logged = event_log.events(row.pk)  # the rows, or the packed block once packed
        numbers = list(range(row.last_sequence_number + 1))
        assert [number for number, _, _ in logged] == numbers
        assert [payload["sequence_number"] for _, _, payload in logged] == numbers
        assert logged[-1][1] == "response.completed"
        streamed = "".join(p["delta"] for _, kind, p in logged if kind == "response.output_text.delta")
        assert streamed == row.output_items.get(output_index=1).data["content"][0]["text"] == words
        event_log.pack(row.pk)  # read again as a replay reads it after packing: the same log
        assert EventLog.objects.filter(response_id=row.pk).exists() and event_log.events(row.pk) == logged
    # Every response committed several batches, and most went in groups with others'.
    assert sum(submitted) > 2 * RESPONSES
    assert max(submitted) > 1 and len(submitted) < sum(submitted) / 2


def test_a_process_runs_no_more_responses_at_once_than_its_slots(monkeypatch):
    monkeypatch.setattr(admission, "_slots", threading.BoundedSemaphore(3))
    running, most = set(), [0]
    lock = threading.Lock()
    claim = worker_run.claim

    def counting_claim(response_id: str, owner: str):
        with lock:
            running.add(response_id)
            most[0] = max(most[0], len(running))
        return claim(response_id, owner)

    end = worker_run.run_claimed

    async def counting_end(response, *args):
        try:
            await end(response, *args)
        finally:
            with lock:
                running.discard(response.pk)

    monkeypatch.setattr(worker_run, "claim", counting_claim)
    monkeypatch.setattr(worker_run, "run_claimed", counting_end)
    ids = create_paced(8)

    run_all(ids)

    assert most[0] == 3
    assert set(Response.objects.filter(pk__in=ids).values_list("status", flat=True)) == {ResponseStatus.COMPLETED}
