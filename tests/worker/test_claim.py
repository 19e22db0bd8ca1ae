"""Claims (worker/claim.py): task threads that claim at once are answered in groups, one
UPDATE and one SELECT each; every response is claimed by exactly one of its claims, a
response delivered twice to one process included, and a cancelled one by none."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from responses_app.dispatch import task_queue
from responses_app.models import Response, ResponseStatus
from responses_app.services.create import create_response
from responses_app.tenancy.api_keys import create_api_key
from responses_app.validation.create import parse_create_request
from responses_app.worker import claim as claims

# Committed rows: each claiming thread has a connection of its own.
pytestmark = [pytest.mark.usefixtures("db_access"), pytest.mark.core]
THREADS = 48


@pytest.fixture(autouse=True)
def no_broker(monkeypatch) -> None:
    monkeypatch.setattr(task_queue, "send", lambda response, task_id, priority=0, **_: None)


def test_claims_made_at_once_go_in_groups_and_each_response_is_claimed_once(monkeypatch):
    tenant = create_api_key("claims")[0].tenant
    ids = [create_response(tenant, parse_create_request({"model": "echo", "input": "hi"})).pk for _ in range(40)]
    Response.objects.filter(pk=ids[0]).update(cancel_requested=True)
    groups: list[int] = []
    claim_group = claims.claim_group

    def counted(owners: dict[str, str]) -> dict[str, Response]:
        groups.append(len(owners))
        return claim_group(owners)

    monkeypatch.setattr(claims, "claim_group", counted)
    # Each response twice (a redelivery to the same process), all at once.
    attempts = [(response_id, f"owner-{n}") for n, response_id in enumerate(ids * 2)]
    start = threading.Barrier(THREADS)

    def attempt(one: tuple[str, str]) -> tuple[str, str, Response | None]:
        try:
            if int(one[1].removeprefix("owner-")) < THREADS:
                start.wait()
            return one[0], one[1], claims.claim(*one)
        finally:
            connection.close()

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(attempt, attempts))

    won = {}
    for response_id, owner, response in results:
        if response is not None:
            assert response_id not in won, "claimed twice"
            assert (response.lease_owner, response.status, response.tenant.pk) == (
                owner, ResponseStatus.IN_PROGRESS, tenant.pk)
            won[response_id] = owner
    assert set(won) == set(ids[1:])  # the cancelled one by none
    rows = dict(Response.objects.filter(pk__in=ids).values_list("pk", "lease_owner"))
    assert all(rows[response_id] == owner for response_id, owner in won.items())
    assert Response.objects.filter(pk__in=ids[1:], attempts=1).count() == len(ids) - 1
    assert sum(groups) == len(attempts) and max(groups) > 1 and len(groups) < len(attempts) / 2
