"""A file deleted from the Files API (by a client, by its expiry, with its tenant) leaves
every vector store it was in, its chunks taken out of their index with their statistics."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from responses_app.models import StoredFile, VectorStoreFile
from responses_app.vector_stores import indexing


@receiver(pre_delete, sender=StoredFile)
def leave_vector_stores(sender: type[StoredFile], instance: StoredFile, **kwargs: Any) -> None:
    for store_file in VectorStoreFile.objects.filter(file=instance):
        indexing.remove_chunks(store_file)
