"""Code interpreter containers: find or create one for a request, create, list and delete
them for the Containers API, run code in them (recording the files a call wrote), expire
idle ones. Every lookup is scoped to the caller's tenant; container_files.py has the files."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from tools_app import container_store
from tools_app.container_lock import ContainerGone, ContainerLease, container_lease
from tools_app.models import Container, ContainerFile, ContainerFileSource, ContainerStatus
from tools_app.sandbox import ExecutionResult, Workspace, run_code

logger = logging.getLogger(__name__)


class ContainerNotFound(Exception):
    """The container does not exist, belongs to another tenant, or has expired. The message
    is safe to show to the client, and the same in all three cases."""

    def __init__(self, container_id: str) -> None:
        super().__init__(f"Container '{container_id}' not found or expired.")
        self.container_id = container_id


class ContainerBusy(Exception):
    """A code interpreter call holds the container's lease: a change from outside a call
    (the Containers API) is tried again later rather than waited for in a shared thread."""


def resolve_container(tenant_id: int, spec: str | dict, reuse_id: str | None = None) -> Container:
    """The container for a request's code_interpreter tool.

    `spec` is the tool's `container`: an id (which must be the tenant's and running) or
    `{"type": "auto", ...}`, which reuses `reuse_id` (the container of an earlier call in the
    conversation) when that is still the tenant's and running, and otherwise creates one."""
    if isinstance(spec, str):
        container = _running(tenant_id, spec)
        if container is None:
            raise ContainerNotFound(spec)
        return container
    if isinstance(spec, dict) and spec.get("type") == "auto":
        if reuse_id:
            container = _running(tenant_id, reuse_id)
            if container is not None:
                return container
        return create_container(tenant_id)
    raise ValueError(f"Unsupported code_interpreter container: {spec!r}")


def create_container(tenant_id: int, name: str = "", idle_timeout_s: int | None = None) -> Container:
    container = Container.objects.create(tenant_id=tenant_id, name=name,
                                         idle_timeout_s=idle_timeout_s or settings.CONTAINER_IDLE_TIMEOUT_S)
    Workspace.for_container(container.pk).create()
    return container


def get_container(tenant_id: int, container_id: str) -> Container:
    """The tenant's container, running or expired (ContainerNotFound otherwise)."""
    container = Container.objects.filter(pk=container_id, tenant_id=tenant_id).first()
    if container is None:
        raise ContainerNotFound(container_id)
    return container


def containers_page(tenant_id: int, *, after: str | None, limit: int, order: str, name: str | None,
                    ) -> tuple[list[Container], bool]:
    """One page of the tenant's containers (running and expired) by created_at."""
    containers = Container.objects.filter(tenant_id=tenant_id)
    if name is not None:
        containers = containers.filter(name=name)
    cursor = get_container(tenant_id, after) if after is not None else None
    return created_at_page(containers, cursor, limit, order)


def created_at_page(rows: QuerySet, cursor: Any, limit: int, order: str) -> tuple[list[Any], bool]:
    """The ``limit`` rows after ``cursor`` (a row, or None for the first page) in
    (created_at, pk) order, and whether more follow."""
    if cursor is not None:
        descending = order == "desc"
        rows = rows.filter(**{"created_at__lte" if descending else "created_at__gte": cursor.created_at}).exclude(
            created_at=cursor.created_at, **{"pk__gte" if descending else "pk__lte": cursor.pk})
    ordering = ("-created_at", "-pk") if order == "desc" else ("created_at", "pk")
    page = list(rows.order_by(*ordering)[: limit + 1])
    return page[:limit], len(page) > limit


def delete_container(tenant_id: int, container_id: str) -> None:
    """Delete the container with its files: marked expired first, so that no new call
    starts in it; then, unless a call running in it holds its lease (ContainerBusy: try
    again), its work dir and session go, and the row with its files' rows."""
    container = get_container(tenant_id, container_id)
    Container.objects.filter(pk=container.pk).update(status=ContainerStatus.EXPIRED)
    with locked(container.pk):
        Workspace.for_container(container.pk).remove()
        container_store.delete_files(container.pk, container.files.values_list("path", flat=True))
        container_store.delete_session(container.pk)
    container.delete()


def execute(container: Container, code: str, timeout_s: float | None = None) -> ExecutionResult:
    """Run code in the container's session, one call at a time per container on every node
    (container_lock.py). Raises ContainerNotFound if the container has expired."""
    workspace = Workspace.for_container(container.pk)
    if not _is_running(container.pk):
        raise ContainerNotFound(container.pk)
    try:
        with container_lease(container.pk) as lease:
            assert lease is not None
            # Checked again under the lease: expiry takes it before deleting the files.
            if not _touch(container, lease):
                raise ContainerNotFound(container.pk)
            workspace.create()
            # Its files and saved session, as another node may have left them.
            container_store.fetch_if_stale(container, workspace)
            result = run_code(workspace, code, timeout_s)
            if not _touch(container, lease):
                # Paused past its lease: the container may have moved on without this call.
                logger.warning("container %s: a call outlived its lease; its changes are not kept", container.pk)
                return result
            gone = record_written_files(container, result)
            container_store.store_files(container.pk, workspace, result.files)
            container_store.delete_files(container.pk, gone)
            container_store.store_session(container.pk, workspace)
            container_store.changed(container.pk, workspace)
    except ContainerGone as gone_meanwhile:
        raise ContainerNotFound(container.pk) from gone_meanwhile
    return result


def expire_idle_containers() -> int:
    """Mark containers idle past their idle_timeout_s expired and delete their dirs; a
    container in the middle of a call is skipped. Returns how many expired."""
    now = timezone.now()
    expired = 0
    candidates = Container.objects.filter(status=ContainerStatus.RUNNING).values_list(
        "pk", "last_active_at", "idle_timeout_s")
    for container_id, last_active_at, idle_timeout_s in candidates.iterator():
        if last_active_at + timedelta(seconds=idle_timeout_s) > now:
            continue
        try:
            with container_lease(container_id, wait=False) as lease:
                if lease is None:
                    continue  # a call is running in it
                # Compare-and-set: a call that touched the container since we looked wins.
                updated = Container.objects.filter(pk=container_id, status=ContainerStatus.RUNNING,
                                                   last_active_at=last_active_at).update(
                    status=ContainerStatus.EXPIRED)
                if updated:
                    # This node's work dir; another node's copy goes with its next look (expired).
                    Workspace.for_container(container_id).remove()
                    files = ContainerFile.objects.filter(container_id=container_id)
                    container_store.delete_files(container_id, files.values_list("path", flat=True))
                    container_store.delete_session(container_id)
                    files.delete()
                    expired += 1
        except ContainerGone:
            continue
    if expired:
        logger.info("Expired %d idle code interpreter containers", expired)
    return expired


@contextmanager
def locked(container_id: str) -> Iterator[None]:
    """The container's lease, for a change of its files from outside a call (the Containers
    API), taken without waiting: ContainerBusy while a call holds it."""
    try:
        with container_lease(container_id, wait=False) as lease:
            if lease is None:
                raise ContainerBusy(container_id)
            yield
    except ContainerGone as gone:
        raise ContainerNotFound(container_id) from gone


def running_container(tenant_id: int, container_id: str) -> Container:
    container = _running(tenant_id, container_id)
    if container is None:
        raise ContainerNotFound(container_id)
    return container


def record_written_files(container: Container, result: ExecutionResult) -> list[str]:
    """After a call (under its lock): the files it wrote are the container's files, with
    ``source`` "assistant" unless the user uploaded them, and the rows of files it deleted
    go. Returns the paths of those."""
    for path in result.files:
        size = result.sizes[path]
        ContainerFile.objects.update_or_create(container=container, path=path, defaults={"bytes": size},
                                               create_defaults={"bytes": size, "source": ContainerFileSource.ASSISTANT})
    gone = [path for path in ContainerFile.objects.filter(container=container).values_list("path", flat=True)
            if path not in result.sizes]
    if gone:
        ContainerFile.objects.filter(container=container, path__in=gone).delete()
    return gone


def _running(tenant_id: int, container_id: str) -> Container | None:
    return Container.objects.filter(pk=container_id, tenant_id=tenant_id, status=ContainerStatus.RUNNING).first()


def _is_running(container_id: str) -> bool:
    return Container.objects.filter(pk=container_id, status=ContainerStatus.RUNNING).exists()


def _touch(container: Container, lease: ContainerLease) -> bool:
    """Mark the container active; False when it has expired, or the lease is no longer held."""
    now = timezone.now()
    updated = Container.objects.filter(pk=container.pk, status=ContainerStatus.RUNNING,
                                       lock_owner=lease.owner).update(last_active_at=now)
    if updated:
        container.last_active_at = now
    return bool(updated)
