"""A container's files in the shared ``files`` storage (settings.STORAGES), beside its work dir.

The work dir (CONTAINERS_DIR on the node that runs a call) is a copy; the storage, under
``containers/<container id>/<path>``, and the rows (ContainerFile) are the truth. Every
change (a call's writes and deletes, an upload, a delete) goes to the storage and bumps
``Container.files_version``; a node whose copy is of an older version (it wrote
``synced_version`` in the work dir's root, out of the sandbox's sight) fetches the files
again before it runs a call. So with several nodes a web node serves a file that a worker
node's code wrote, and a call on another worker node finds the container's files.

The interpreter's saved session (its variables, ``session/session.pkl``) is stored the
same way after every call, under ``container-sessions/<container id>/``, and is part of
the version: a call on another node (its node lost, or busy) goes on with the variables
the last call left.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from django.core.files import File
from django.core.files.storage import Storage, storages
from django.db.models import F

from tools_app.models import Container, ContainerFile
from tools_app.sandbox import Workspace
from tools_app.sandbox.files import open_beneath, write_path_beneath

PREFIX = "containers"
SESSION_PREFIX = "container-sessions"
SESSION_FILE = "session.pkl"


def storage() -> Storage:
    return storages["files"]


def storage_name(container_id: str, path: str) -> str:
    return f"{PREFIX}/{container_id}/{path}"


def store_files(container_id: str, workspace: Workspace, paths: Iterable[str]) -> None:
    """Copy these files of the work dir to the storage (a file gone meanwhile is skipped)."""
    for path in paths:
        _store(workspace.data_dir, path, storage_name(container_id, path))


def _store(folder: Path, path: str, name: str) -> bool:
    """Copy ``path`` under ``folder`` to the storage as ``name``; False when it is not there."""
    try:
        fd = open_beneath(folder, path)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as content:
        storage().delete(name)  # the file system storage would save beside it, not over it
        storage().save(name, File(content))
    return True


def session_name(container_id: str) -> str:
    return f"{SESSION_PREFIX}/{container_id}/{SESSION_FILE}"


def store_session(container_id: str, workspace: Workspace) -> None:
    """After a call: the session it saved is the container's (none: the stored one goes)."""
    if not _store(workspace.session_dir, SESSION_FILE, session_name(container_id)):
        delete_session(container_id)


def delete_session(container_id: str) -> None:
    storage().delete(session_name(container_id))


def delete_files(container_id: str, paths: Iterable[str]) -> None:
    for path in paths:
        storage().delete(storage_name(container_id, path))


def open_file(file: ContainerFile) -> File:
    return storage().open(storage_name(file.container_id, file.path), "rb")


def changed(container_id: str, workspace: Workspace) -> None:
    """After a change made through this work dir (and stored): a new version, which this
    copy holds if it held the one before."""
    Container.objects.filter(pk=container_id).update(files_version=F("files_version") + 1)
    version = Container.objects.filter(pk=container_id).values_list("files_version", flat=True).first()
    if version is not None and _synced_version(workspace) == version - 1:
        _write_synced_version(workspace, version)


def fetch_if_stale(container: Container, workspace: Workspace) -> None:
    """Before a call (under the container's lock): make the work dir the stored version."""
    version = Container.objects.filter(pk=container.pk).values_list("files_version", flat=True).first() or 0
    if _synced_version(workspace) == version:
        return
    for folder in (workspace.data_dir, workspace.session_dir):
        shutil.rmtree(folder, ignore_errors=True)  # never follows links planted in it
    workspace.create()
    for file in ContainerFile.objects.filter(container=container):
        with open_file(file) as content:
            write_path_beneath(workspace.data_dir, file.path, content.chunks(), workspace.uid)
    if storage().exists(session_name(container.pk)):
        with storage().open(session_name(container.pk), "rb") as session:
            write_path_beneath(workspace.session_dir, SESSION_FILE, session.chunks(), workspace.uid)
    _write_synced_version(workspace, version)


def _synced_version(workspace: Workspace) -> int:
    """The version of the work dir's files; 0 (no change yet: no file) where none is written."""
    try:
        return int((workspace.root / "synced_version").read_text())
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        return -1  # unreadable: fetch again


def _write_synced_version(workspace: Workspace, version: int) -> None:
    workspace.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    (workspace.root / "synced_version").write_text(str(version))
