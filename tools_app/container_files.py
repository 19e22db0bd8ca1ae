"""The files of a container as the Containers API manages them: upload into its work dir
(/mnt/data in the sandbox), list, retrieve, delete, read. Every lookup is scoped to the
caller's tenant and to a running container; a change takes the container's lock, so it
never lands in the middle of a code interpreter call."""

from __future__ import annotations

import os
from collections.abc import Iterable

from django.core.files import File
from django.db import transaction

from tools_app import container_store
from tools_app.containers import created_at_page, locked, running_container
from tools_app.models import ContainerFile, ContainerFileSource
from tools_app.sandbox import Workspace
from tools_app.sandbox.files import open_beneath, unlink_beneath, write_beneath

DATA_DIR = "/mnt/data/"


class FileNotInContainer(Exception):
    def __init__(self, container_id: str, file_id: str) -> None:
        super().__init__(f"File '{file_id}' not found in container '{container_id}'.")


def upload_file(tenant_id: int, container_id: str, name: str, chunks: Iterable[bytes]) -> ContainerFile:
    """Write an uploaded file as /mnt/data/<name> (``name`` has no directory), replacing a
    file of that name; the row says ``source`` "user". Raises ContainerNotFound, and
    FileExistsError where a directory or link holds the name."""
    container = running_container(tenant_id, container_id)
    workspace = Workspace.for_container(container.pk)
    with locked(container.pk):
        with transaction.atomic():
            size = write_beneath(workspace.data_dir, name, chunks, workspace.uid)
            file, _ = ContainerFile.objects.update_or_create(container=container, path=name, defaults={
                "bytes": size, "source": ContainerFileSource.USER})
        container_store.store_files(container.pk, workspace, [name])
        container_store.changed(container.pk, workspace)
    return file


def get_file(tenant_id: int, container_id: str, file_id: str) -> ContainerFile:
    running_container(tenant_id, container_id)
    file = ContainerFile.objects.filter(pk=file_id, container_id=container_id).first()
    if file is None:
        raise FileNotInContainer(container_id, file_id)
    return file


def files_page(tenant_id: int, container_id: str, *, after: str | None, limit: int, order: str) -> tuple[
        list[ContainerFile], bool]:
    """One page of the container's files by created_at, and whether more follow."""
    running_container(tenant_id, container_id)
    cursor = get_file(tenant_id, container_id, after) if after is not None else None
    return created_at_page(ContainerFile.objects.filter(container_id=container_id), cursor, limit, order)


def delete_file(tenant_id: int, container_id: str, file_id: str) -> None:
    file = get_file(tenant_id, container_id, file_id)
    workspace = Workspace.for_container(container_id)
    with locked(container_id):
        try:
            unlink_beneath(workspace.data_dir, file.path)
        except FileNotFoundError:
            pass  # the code removed it already, or this node has no copy: the row goes all the same
        file.delete()
        container_store.delete_files(container_id, [file.path])
        container_store.changed(container_id, workspace)


def open_file(tenant_id: int, container_id: str, file_id: str) -> tuple[ContainerFile, File]:
    """The file's row and its bytes, open for reading, from the shared storage (from the
    work dir for a file stored before the storage held containers' files);
    FileNotInContainer if its bytes are gone."""
    file = get_file(tenant_id, container_id, file_id)
    try:
        return file, container_store.open_file(file)
    except FileNotFoundError:
        pass
    try:
        return file, File(os.fdopen(open_beneath(Workspace.for_container(container_id).data_dir, file.path), "rb"))
    except FileNotFoundError:
        raise FileNotInContainer(container_id, file_id) from None


def file_ids(container_id: str, paths: list[str]) -> dict[str, str]:
    """The ids of the container's files at ``paths`` (relative to the work dir)."""
    return dict(ContainerFile.objects.filter(container_id=container_id, path__in=paths).values_list("path", "pk"))
