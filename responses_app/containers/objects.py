"""A container and its files as the Containers API answers with them."""

from __future__ import annotations

from typing import Any

from tools_app.models import Container, ContainerFile


def container_object(container: Container) -> dict[str, Any]:
    """A code interpreter container (tools_app's Container) as ``client.containers`` types it."""
    return {"id": container.pk, "object": "container", "name": container.name, "status": container.status,
            "created_at": int(container.created_at.timestamp()),
            "last_active_at": int(container.last_active_at.timestamp()),
            "expires_after": {"anchor": "last_active_at", "minutes": max(1, container.idle_timeout_s // 60)},
            "memory_limit": "1g", "network_policy": {"type": "disabled"}}


def container_file_object(file: ContainerFile) -> dict[str, Any]:
    """A file of a container (tools_app's ContainerFile), its path as the sandbox sees it."""
    return {"id": file.pk, "object": "container.file", "container_id": file.container_id,
            "path": f"/mnt/data/{file.path}", "bytes": file.bytes, "source": file.source,
            "created_at": int(file.created_at.timestamp())}
