"""A tenant's prompts, each a series of immutable versions: create (version 1), add a
version, retrieve (the latest or a given version), list, list versions, delete. Bodies come
parsed (requests.py); another tenant's prompt is a 404 like one that never existed."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from responses_app.models import PromptVersion, Tenant
from responses_app.prompts.requests import PromptTemplate
from responses_app.tenancy.quotas import check_object_count
from responses_app.wire.errors import InvalidRequest, NotFound
from responses_app.wire.objects import list_object


def prompt_object(version: PromptVersion) -> dict[str, Any]:
    return {"id": version.prompt_id, "object": "prompt", "version": str(version.version),
            "instructions": version.instructions, "input": version.input, "variables": version.variables,
            "metadata": version.metadata, "created_at": int(version.created_at.timestamp())}


def create_prompt(tenant: Tenant, template: PromptTemplate) -> PromptVersion:
    _check_room(tenant)
    return PromptVersion.objects.create(tenant=tenant, version=1, **template.columns())


def add_version(tenant: Tenant, prompt_id: str, template: PromptTemplate) -> PromptVersion:
    """The prompt's next version; versions are never changed, so a response that named one
    reads the same prompt later."""
    fields = template.columns()
    _check_room(tenant)
    for _ in range(3):  # two concurrent versions of one prompt: the unique constraint picks one, the other retries
        latest = _versions(tenant, prompt_id).aggregate(latest=Max("version"))["latest"]
        if latest is None:
            raise _not_found(prompt_id)
        try:
            with transaction.atomic():
                return PromptVersion.objects.create(tenant=tenant, prompt_id=prompt_id, version=latest + 1, **fields)
        except IntegrityError:
            continue
    raise InvalidRequest("The prompt is being changed by another request; try again.", param="prompt_id",
                         code="conflict")


def get_version(tenant: Tenant, prompt_id: str, version: str | None, *, id_param: str = "prompt_id",
                version_param: str = "version") -> PromptVersion:
    """The given version of the prompt (its latest when None): 404 for an unknown prompt or version."""
    versions = _versions(tenant, prompt_id)
    if version is None:
        found = versions.order_by("-version").first()
    else:
        found = versions.filter(version=int(version)).first() if version.isdigit() and len(version) < 10 else None
        if found is None and versions.exists():
            raise NotFound(f"Prompt '{prompt_id}' has no version '{version}'.", param=version_param)
    if found is None:
        raise _not_found(prompt_id, id_param)
    return found


def list_page(tenant: Tenant, *, after: str | None, limit: int) -> dict[str, Any]:
    """The latest version of each prompt, newest prompt first."""
    latest = PromptVersion.objects.filter(tenant=tenant).values("prompt_id").annotate(
        latest=Max("version"), first=Max("pk")).order_by("-first")
    rows = list(latest)
    if after is not None:
        ids = [row["prompt_id"] for row in rows]
        if after not in ids:
            raise _not_found(after, "after")
        rows = rows[ids.index(after) + 1:]
    page = rows[: limit + 1]
    versions = {(v.prompt_id, v.version): v for v in PromptVersion.objects.filter(
        tenant=tenant, prompt_id__in=[row["prompt_id"] for row in page[:limit]])}
    return list_object([prompt_object(versions[(row["prompt_id"], row["latest"])]) for row in page[:limit]],
                       len(page) > limit)


def versions_list(tenant: Tenant, prompt_id: str) -> dict[str, Any]:
    versions = list(_versions(tenant, prompt_id).order_by("version"))
    if not versions:
        raise _not_found(prompt_id)
    return list_object([prompt_object(version) for version in versions], False)


def delete_prompt(tenant: Tenant, prompt_id: str) -> None:
    deleted, _ = _versions(tenant, prompt_id).delete()
    if not deleted:
        raise _not_found(prompt_id)


def _check_room(tenant: Tenant) -> None:
    check_object_count(PromptVersion.objects.filter(tenant=tenant), settings.TENANT_MAX_PROMPT_VERSIONS,
                       "prompt versions", "TENANT_MAX_PROMPT_VERSIONS")


def _versions(tenant: Tenant, prompt_id: str):
    return PromptVersion.objects.filter(tenant=tenant, prompt_id=prompt_id)


def _not_found(prompt_id: str, param: str = "prompt_id") -> NotFound:
    return NotFound(f"Prompt with id '{prompt_id}' not found.", param=param)
