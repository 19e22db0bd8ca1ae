"""Riding out a database restart (lib/db_outage.py)."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection

from responses_app.lib.db_outage import read_on_a_live_connection
from responses_app.models import Tenant

pytestmark = [pytest.mark.django_db(transaction=False), pytest.mark.core]


def test_a_read_that_meets_a_broken_connection_is_made_once_more_on_a_new_one(monkeypatch):
    closed: list[bool] = []
    monkeypatch.setattr(connection, "close", lambda: closed.append(True))
    attempts: list[int] = []

    def read() -> int:
        attempts.append(1)
        if len(attempts) == 1:
            raise OperationalError("consuming input failed: server closed the connection unexpectedly")
        return Tenant.objects.count()

    assert read_on_a_live_connection(read) == Tenant.objects.count()
    assert (len(attempts), closed) == (2, [True])


def test_a_database_still_down_is_not_tried_again_and_again(monkeypatch):
    closed: list[bool] = []
    monkeypatch.setattr(connection, "close", lambda: closed.append(True))
    attempts: list[int] = []

    def read() -> int:
        attempts.append(1)
        raise OperationalError(f"connection refused (attempt {len(attempts)})")

    # Once on a new connection after the first failure, then the second failure is raised.
    with pytest.raises(OperationalError, match=r"attempt 2\)"):
        read_on_a_live_connection(read)
    assert (len(attempts), closed) == (2, [True])
