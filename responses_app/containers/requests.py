"""The bodies of the Containers API (``client.containers``), with OpenAI's 400s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from responses_app.files.requests import file_ids_field
from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.request_body import body_fields, is_integer

MAX_NAME = 200
MAX_EXPIRY_MINUTES = 7 * 24 * 60
FIELDS = ("name", "expires_after", "file_ids", "memory_limit", "network_policy", "skills")
# The sandbox's limits are the server's (SANDBOX_* settings), and it has no network.
SANDBOX_MEMORY_LIMIT = "1g"


@dataclass(frozen=True)
class ContainerCreate:
    name: str
    idle_timeout_s: int | None  # None: CONTAINER_IDLE_TIMEOUT_S
    file_ids: list[str]  # Files API files copied into /mnt/data


def parse_container_create(body: Any) -> ContainerCreate:
    fields = body_fields(body, FIELDS, required=("name",))
    name = fields["name"]
    if not isinstance(name, str):
        raise invalid_type("name", "a string", name)
    if len(name) > MAX_NAME:
        raise InvalidRequest(f"'name' can be at most {MAX_NAME} characters.", param="name",
                             code="string_above_max_length")
    if fields.get("skills"):
        raise InvalidRequest("'skills' is not supported by this server.", param="skills")
    if fields.get("memory_limit", SANDBOX_MEMORY_LIMIT) != SANDBOX_MEMORY_LIMIT:
        raise InvalidRequest(f"This server's sandbox has one memory limit: 'memory_limit' can only be "
                             f"'{SANDBOX_MEMORY_LIMIT}'.", param="memory_limit")
    policy = fields.get("network_policy", {"type": "disabled"})
    if policy != {"type": "disabled"}:
        raise InvalidRequest("The sandbox has no network: 'network_policy' can only be {'type': 'disabled'}.",
                             param="network_policy")
    file_ids = file_ids_field(fields["file_ids"], "file_ids") if fields.get("file_ids") is not None else []
    return ContainerCreate(name=name, idle_timeout_s=_expiry(fields.get("expires_after")), file_ids=file_ids)


def _expiry(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid_type("expires_after", "an object", value)
    if value.get("anchor") != "last_active_at" or set(value) != {"anchor", "minutes"}:
        raise InvalidRequest("'expires_after' takes {'anchor': 'last_active_at', 'minutes': N}.",
                             param="expires_after")
    minutes = value["minutes"]
    if not is_integer(minutes) or not 1 <= minutes <= MAX_EXPIRY_MINUTES:
        raise InvalidRequest(f"'expires_after.minutes' must be an integer from 1 to {MAX_EXPIRY_MINUTES}.",
                             param="expires_after.minutes")
    return minutes * 60


def upload_name(name: str | None) -> str:
    """The file name of an upload, as it will sit in /mnt/data."""
    if not name or name in (".", "..") or "/" in name or "\x00" in name or len(name.encode()) > 255:
        raise InvalidRequest(f"Invalid file name: {name!r}.", param="file")
    return name
