"""SQLite's writers take turns through a file lock (project/db_backends/sqlite3): a write
outside a transaction waits for its turn like a transaction does."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid

import pytest
from django.db import connection, connections

from responses_app.models import Tenant

# Committed rows of its own, removed at the end: a flush would empty the database that the
# live servers share with the other tests.
pytestmark = [pytest.mark.usefixtures("django_db_setup", "db_access"), pytest.mark.core]

# Another process's writer: it holds the writers' lock until told to let go.
HOLDER = """
import fcntl, os, sys
lock = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(lock, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_write_outside_a_transaction_waits_for_its_turn() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the writers' turns are SQLite's")
    tenant = Tenant.objects.create(name=f"turns-{uuid.uuid4().hex[:8]}")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, f"{connection.settings_dict['NAME']}.writers"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    written = threading.Event()

    def rename() -> None:  # autocommit: the UPDATE is a transaction of its own
        try:
            Tenant.objects.filter(pk=tenant.pk).update(name=f"{tenant.name}-renamed")
            written.set()
        finally:
            connections.close_all()

    try:
        assert holder.stdout.readline() == b"held\n"
        writer = threading.Thread(target=rename)
        writer.start()
        assert not written.wait(0.5), "the UPDATE did not wait for the other process's turn to end"
        holder.stdin.write(b"\n")
        holder.stdin.flush()
        assert written.wait(10), "the UPDATE did not run once the turn was free"
        writer.join()
        assert Tenant.objects.get(pk=tenant.pk).name == f"{tenant.name}-renamed"
    finally:
        holder.kill()
        holder.wait()
        Tenant.objects.filter(pk=tenant.pk).delete()
