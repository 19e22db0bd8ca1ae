"""Files of the Files API (client.files): what a tenant uploaded, and what the server
wrote for it (a batch's output). The bytes live in the ``files`` storage (settings.STORAGES:
the local file system by default); the row says whose they are and until when."""

from __future__ import annotations

import secrets

from django.db import models
from django.utils import timezone

from responses_app.models.responses import Tenant


def new_file_id() -> str:
    # OpenAI's file ids are "file-" and a random string: clients match on the prefix.
    return f"file-{secrets.token_hex(24)}"


class FilePurpose(models.TextChoices):
    """The purposes a client may upload with (the SDK's FilePurpose), and batch_output,
    which only the server writes."""

    ASSISTANTS = "assistants"
    BATCH = "batch"
    FINE_TUNE = "fine-tune"
    VISION = "vision"
    USER_DATA = "user_data"
    EVALS = "evals"
    BATCH_OUTPUT = "batch_output"


UPLOAD_PURPOSES = frozenset(FilePurpose) - {FilePurpose.BATCH_OUTPUT}


class StoredFile(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_file_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="files")
    filename = models.CharField(max_length=255)
    purpose = models.CharField(max_length=32, choices=FilePurpose.choices)
    bytes = models.BigIntegerField()
    # The object's name in the files storage.
    storage_name = models.CharField(max_length=300)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "created_at"]), models.Index(fields=["expires_at"])]

    def __str__(self) -> str:
        return f"{self.id} ({self.filename})"
