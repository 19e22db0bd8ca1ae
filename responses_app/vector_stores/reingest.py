"""Re-ingesting a file of a vector store (the operator console's action, for a file that
failed or was indexed by older code): the file is read, cut and indexed again as if it had
just been attached, with its attributes and chunking kept.

Its chunks leave the index in the same transaction that puts it back ``in_progress``, and
ingestion (vector_stores/ingest.py) writes chunks only in the transaction that flips a file
from ``in_progress`` to ``completed``, so the index never holds the file twice: however many
re-ingestions and ingestions of one file race, one flip wins and the others find nothing to do."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from responses_app.models import VectorStoreFile, VectorStoreFileStatus
from responses_app.vector_stores import indexing, ingest


def reingest_file(store_file_id: int) -> bool:
    """Put the file back in progress with nothing indexed (no last_error, no usage, its
    attempts at 0 so that beat's sweep gives it every try again) and send its ingestion
    once that commits. False when the file is no longer attached (nothing is done)."""
    with transaction.atomic():
        # The row first, as ingestion's flip takes it: a flip that committed before is seen
        # with its chunks (removed here), one that comes after waits and finds the file
        # in progress with nothing indexed.
        store_file = VectorStoreFile.objects.select_for_update().filter(pk=store_file_id).first()
        if store_file is None:
            return False
        indexing.remove_chunks(store_file)
        VectorStoreFile.objects.filter(pk=store_file.pk).update(
            status=VectorStoreFileStatus.IN_PROGRESS, last_error=None, usage_bytes=0, ingest_attempts=0,
            ingest_sent_at=timezone.now(), ingest_beat_at=None)
        # Through the module attribute, so that tests (and the in-process stack) can swap it.
        transaction.on_commit(lambda: ingest.send_ingest_task(store_file_id))
    return True
