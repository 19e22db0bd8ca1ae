"""Vector stores (client.vector_stores): a tenant's files, cut into chunks and indexed, that
``vector_stores.search`` and the ``file_search`` tool look through.

A file's chunks are written in the one transaction that marks it ``completed``
(vector_stores/ingest.py), so a file is indexed whole or not at all. The lexical index over
the chunks' ``terms`` is the database's own: an FTS5 table kept by triggers on SQLite, a GIN
index over the terms' tsvector on PostgreSQL (migration 0016)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from responses_app.lib.ids import new_id
from responses_app.models.files import StoredFile
from responses_app.models.responses import Tenant


def new_vector_store_id() -> str:
    return new_id("vs")


def new_file_batch_id() -> str:
    return new_id("vsfb")


class VectorStoreFileStatus(models.TextChoices):
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"


class VectorStore(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_vector_store_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="vector_stores")
    name = models.CharField(max_length=256, blank=True)
    description = models.TextField(blank=True)
    metadata = models.JSONField(null=True, blank=True)
    # expires_after: {"anchor": "last_active_at", "days": N}; the store expires N days after
    # its last use (a search, a file added).
    expires_after_days = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_active_at = models.DateTimeField(default=timezone.now)
    # The BM25 statistics of its completed files' chunks (vector_stores/search.py), kept by
    # the transactions that index and unindex a file.
    chunk_count = models.PositiveIntegerField(default=0)
    term_count = models.PositiveBigIntegerField(default=0)
    # The model of settings.EMBEDDING_MODELS that embeds its chunks, fixed at its create so
    # that all of its vectors compare ("": lexical search only).
    embedding_model = models.CharField(max_length=128, blank=True)
    # One more with every change to its chunks: a process's copy of its vectors
    # (vector_stores/vectors.py) is good while it was read at the version now stored.
    index_version = models.PositiveBigIntegerField(default=0)
    # The chunking of a file added without a chunking_strategy of its own: the create's
    # (OpenAI's auto, 800 tokens overlapping by 400, unless it named static sizes).
    chunking_type = models.CharField(max_length=8, default="auto")
    max_chunk_size_tokens = models.PositiveIntegerField(default=800)
    chunk_overlap_tokens = models.PositiveIntegerField(default=400)

    class Meta:
        indexes = [models.Index(fields=["tenant", "created_at"])]

    def __str__(self) -> str:
        return f"{self.id} ({self.name})" if self.name else self.id


class VectorStoreFileBatch(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_file_batch_id, editable=False)
    vector_store = models.ForeignKey(VectorStore, on_delete=models.CASCADE, related_name="file_batches")
    created_at = models.DateTimeField(default=timezone.now)
    # Set by a cancel: its files still in progress are cancelled.
    cancelled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.id


class VectorStoreFile(models.Model):
    """A file of the Files API attached to a store; its id on the wire is the file's id."""

    vector_store = models.ForeignKey(VectorStore, on_delete=models.CASCADE, related_name="files")
    file = models.ForeignKey(StoredFile, on_delete=models.CASCADE, related_name="vector_store_files")
    batch = models.ForeignKey(VectorStoreFileBatch, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="files")
    status = models.CharField(max_length=16, choices=VectorStoreFileStatus.choices,
                              default=VectorStoreFileStatus.IN_PROGRESS)
    # {"code": "server_error" | "unsupported_file" | "invalid_file", "message": ...}
    last_error = models.JSONField(null=True, blank=True)
    attributes = models.JSONField(null=True, blank=True)
    max_chunk_size_tokens = models.PositiveIntegerField()
    chunk_overlap_tokens = models.PositiveIntegerField()
    # "auto" or "static": what the client asked for (both are stored as their sizes).
    chunking_type = models.CharField(max_length=8, default="auto")
    usage_bytes = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    # Ingestion (vector_stores/ingest.py): the starts so far, when its task was last sent,
    # and the last sign of life of the worker reading it (None until one starts it).
    ingest_attempts = models.PositiveSmallIntegerField(default=0)
    ingest_sent_at = models.DateTimeField(default=timezone.now)
    ingest_beat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["vector_store", "file"], name="vector_store_file_unique")]
        indexes = [models.Index(fields=["vector_store", "status", "created_at"]),
                   models.Index(fields=["status", "ingest_sent_at"])]

    def __str__(self) -> str:
        return f"{self.file_id} in {self.vector_store_id}"


class VectorStoreChunk(models.Model):
    """A piece of a file's text, and its terms as the lexical index reads them."""

    vector_store = models.ForeignKey(VectorStore, on_delete=models.CASCADE, related_name="chunks")
    vector_store_file = models.ForeignKey(VectorStoreFile, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()  # in the file, from 0
    text = models.TextField()
    # The analyzed terms (vector_stores/analysis.py), space-separated, led by the store's own
    # token so that the index finds a store's chunks without a second index.
    terms = models.TextField()
    term_count = models.PositiveIntegerField()
    # Its unit vector by the store's embedding model, float16 little-endian (null without one).
    embedding = models.BinaryField(null=True)

    class Meta:
        indexes = [models.Index(fields=["vector_store_file", "position"])]


class VectorStoreTerm(models.Model):
    """How many of a store's chunks hold a term: the document frequency of BM25."""

    vector_store = models.ForeignKey(VectorStore, on_delete=models.CASCADE, related_name="terms")
    term = models.CharField(max_length=64)
    chunks = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["vector_store", "term"], name="vector_store_term_unique")]
