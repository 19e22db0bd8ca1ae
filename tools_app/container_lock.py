"""One code interpreter call at a time per container, across every node: a lease on the
container's row, as a response's claim is one (a compare-and-set UPDATE of its owner and
expiry), renewed while the call runs and released after it.

A lease, not a lock held by a connection or a file: the node that holds it may vanish (a
SIGKILL, a lost machine), and then its lease runs out after CONTAINER_LOCK_TTL_S and the
next call takes the container over. What a call commits afterwards (its files, its saved
session, the container's version) is committed only while its lease still holds, so a
node that lost it (paused past its expiry) cannot overwrite the next call's work.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Q
from django.utils import timezone

from tools_app.models import Container

log = logging.getLogger(__name__)
# How often a waiting call tries again.
POLL_S = 0.1


class ContainerGone(Exception):
    """The container's row was deleted while a call waited for it."""


@dataclass(frozen=True)
class ContainerLease:
    container_id: str
    owner: str


@contextmanager
def container_lease(container_id: str, wait: bool = True) -> Iterator[ContainerLease | None]:
    """Hold the container's lease (waiting for it, unless ``wait`` is False: then None is
    yielded, holding nothing, while another holds it). Raises ContainerGone."""
    lease = ContainerLease(container_id, f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}")
    while not _take(lease):
        if not wait:
            yield None
            return
        time.sleep(POLL_S)
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(lease, stop), name="container-lease", daemon=True)
    renewer.start()
    try:
        yield lease
    finally:
        stop.set()
        renewer.join()
        Container.objects.filter(pk=container_id, lock_owner=lease.owner).update(lock_owner="", lock_expires_at=None)


def _take(lease: ContainerLease) -> bool:
    now = timezone.now()
    taken = Container.objects.filter(Q(lock_owner="") | Q(lock_expires_at__lt=now), pk=lease.container_id).update(
        lock_owner=lease.owner, lock_expires_at=now + timedelta(seconds=settings.CONTAINER_LOCK_TTL_S))
    if not taken and not Container.objects.filter(pk=lease.container_id).exists():
        raise ContainerGone(lease.container_id)
    return bool(taken)


def _renew(lease: ContainerLease, stop: threading.Event) -> None:
    """Renew the lease every third of its time to live until ``stop`` (a thread of its
    own: the call's thread waits on the sandbox)."""
    close_old_connections()
    try:
        while not stop.wait(settings.CONTAINER_LOCK_TTL_S / 3):
            renewed = Container.objects.filter(pk=lease.container_id, lock_owner=lease.owner).update(
                lock_expires_at=timezone.now() + timedelta(seconds=settings.CONTAINER_LOCK_TTL_S))
            if not renewed:
                log.warning("container %s: the lease of a running call was lost", lease.container_id)
                return
    finally:
        connection.close()
