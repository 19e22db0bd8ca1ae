"""Files of the Files API copied into a code interpreter container's /mnt/data
(``containers.create(file_ids=...)`` and a code_interpreter tool's ``container.file_ids``)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from responses_app.files import store
from responses_app.models import StoredFile, Tenant
from responses_app.wire.errors import InvalidRequest, NotFound

log = logging.getLogger(__name__)


def check_file_ids(tenant: Tenant, file_ids: list[str], param: str) -> None:
    """Each id names one of the tenant's files (a 404 naming the first that does not),
    small enough for a container (a 400)."""
    for index, file_id in enumerate(file_ids):
        try:
            _check_size(store.get_file(tenant, file_id), f"{param}[{index}]")
        except NotFound as error:
            error.param = f"{param}[{index}]"
            raise


def create_with_files(tenant: Tenant, name: str, idle_timeout_s: int | None, file_ids: list[str]) -> Any:
    """``containers.create``: a container with the files it names in /mnt/data (every one
    checked first, so that a refused create makes no container)."""
    from tools_app.containers import create_container

    check_file_ids(tenant, file_ids, "file_ids")
    container = create_container(tenant.pk, name, idle_timeout_s)
    copy_into_container(tenant, container.pk, file_ids)
    return container


def copy_into_container(tenant: Tenant, container_id: str, file_ids: list[str]) -> None:
    """Each file (checked with check_file_ids) into /mnt/data under its filename (a later
    one of the same name wins); one deleted since the check is left out."""
    for file_id in file_ids:
        try:
            copy_file_into_container(tenant, container_id, file_id)
        except NotFound:
            log.warning("%s: file %s was deleted before it could be copied in", container_id, file_id)


def copy_file_into_container(tenant: Tenant, container_id: str, file_id: str) -> Any:
    """One file into /mnt/data (``containers.files.create(file_id=...)``): the container
    file it became. Raises NotFound, tools_app's ContainerNotFound, or InvalidRequest for
    a file over CONTAINER_FILE_MAX_BYTES."""
    from tools_app.container_files import upload_file

    row = store.get_file(tenant, file_id)
    _check_size(row, "file_id")
    with store.open_content(row) as content:
        return upload_file(tenant.pk, container_id, row.filename, content.chunks())


def _check_size(row: StoredFile, param: str) -> None:
    if row.bytes > settings.CONTAINER_FILE_MAX_BYTES:
        raise InvalidRequest(f"The file is {row.bytes} bytes; the most a container file may have is "
                             f"{settings.CONTAINER_FILE_MAX_BYTES}.", param=param, code="file_too_large")
