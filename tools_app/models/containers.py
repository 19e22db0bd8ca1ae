from __future__ import annotations

import secrets

from django.db import models

from tools_app.sandbox.files import MAX_PATH_LENGTH


def new_container_id() -> str:
    # OpenAI's id style, as responses_app.ids makes them (tools_app imports nothing from there).
    return f"cntr_{secrets.token_hex(24)}"


def new_container_file_id() -> str:
    return f"cfile_{secrets.token_hex(24)}"


class ContainerStatus(models.TextChoices):
    RUNNING = "running"
    EXPIRED = "expired"


class Container(models.Model):
    """A code interpreter container: a private work dir (files) and the saved Python
    session (variables) of one tenant, reused by id until it idles past its expiry."""

    id = models.CharField(primary_key=True, max_length=64, default=new_container_id, editable=False)
    tenant = models.ForeignKey("responses_app.Tenant", on_delete=models.CASCADE, related_name="containers")
    name = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=ContainerStatus.choices, default=ContainerStatus.RUNNING)
    created_at = models.DateTimeField(auto_now_add=True)
    last_active_at = models.DateTimeField(auto_now_add=True)
    idle_timeout_s = models.PositiveIntegerField()
    # Bumped by every change of its files (tools_app/container_store.py): a node whose work
    # dir holds an older version fetches the files from the shared storage before a call.
    files_version = models.PositiveIntegerField(default=0)
    # One code interpreter call at a time on every node: the lease of the call that runs
    # (tools_app/container_lock.py).
    lock_owner = models.CharField(max_length=128, blank=True)
    lock_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "last_active_at"])]

    def __str__(self) -> str:
        return self.id


class ContainerFileSource(models.TextChoices):
    USER = "user"  # uploaded through the API
    ASSISTANT = "assistant"  # written by the model's code


class ContainerFile(models.Model):
    """A file in a container's work dir (/mnt/data), known by id: uploaded by the user, or
    found written by a code interpreter call (containers.execute registers it). The bytes
    live in the work dir; this row names them."""

    id = models.CharField(primary_key=True, max_length=64, default=new_container_file_id, editable=False)
    container = models.ForeignKey(Container, on_delete=models.CASCADE, related_name="files")
    # Relative to the work dir: "data.csv" is /mnt/data/data.csv in the sandbox.
    path = models.CharField(max_length=MAX_PATH_LENGTH)
    bytes = models.PositiveBigIntegerField()
    source = models.CharField(max_length=16, choices=ContainerFileSource.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["container", "path"], name="container_file_path_unique")]
        indexes = [models.Index(fields=["container", "created_at"])]

    def __str__(self) -> str:
        return self.id
