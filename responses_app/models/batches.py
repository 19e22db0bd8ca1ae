"""Batches (client.batches): a file of create requests run offline, on the model workers'
spare capacity, into an output file and an error file."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from responses_app.lib.ids import new_id
from responses_app.models.responses import Tenant


def new_batch_id() -> str:
    return new_id("batch")


def new_batch_request_id() -> str:
    return new_id("batch_req")


class BatchStatus(models.TextChoices):
    VALIDATING = "validating"
    FAILED = "failed"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    EXPIRED = "expired"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"


BATCH_TERMINAL_STATUSES = frozenset(
    {BatchStatus.FAILED, BatchStatus.COMPLETED, BatchStatus.EXPIRED, BatchStatus.CANCELLED})
# The webhook event of each end (the SDK's Batch*WebhookEvent types).
BATCH_WEBHOOK_EVENTS = {
    BatchStatus.COMPLETED: "batch.completed",
    BatchStatus.FAILED: "batch.failed",
    BatchStatus.EXPIRED: "batch.expired",
    BatchStatus.CANCELLED: "batch.cancelled",
}


class BatchRequestState(models.TextChoices):
    QUEUED = "queued"  # waits for a slot of its batch
    RUNNING = "running"  # its response is queued or running
    COMPLETED = "completed"  # its response ended completed or incomplete: a line of the output file
    FAILED = "failed"  # refused at create, or its response failed: a line of the error file
    CANCELLED = "cancelled"  # the batch was cancelled before it ended
    EXPIRED = "expired"  # the batch's window ended before it ended


BATCH_REQUEST_ENDS = frozenset(
    {BatchRequestState.COMPLETED, BatchRequestState.FAILED, BatchRequestState.CANCELLED, BatchRequestState.EXPIRED})


class Batch(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_batch_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="batches")
    endpoint = models.CharField(max_length=64)
    input_file_id = models.CharField(max_length=64)
    completion_window = models.CharField(max_length=16)
    # The one model of every request (known once the input file is validated).
    model = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=BatchStatus.choices, default=BatchStatus.VALIDATING)
    metadata = models.JSONField(null=True, blank=True)
    # The input file's errors, as the SDK's BatchError list (a failed validation).
    errors = models.JSONField(null=True, blank=True)
    output_file_id = models.CharField(max_length=64, blank=True)
    error_file_id = models.CharField(max_length=64, blank=True)
    # output_expires_after.seconds: how long the output and error files are kept.
    output_expires_after_s = models.PositiveIntegerField(null=True, blank=True)
    total = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    usage = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    in_progress_at = models.DateTimeField(null=True, blank=True)
    finalizing_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    cancelling_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    # The last step taken (batches/runner.advance_batch): beat's tick takes up only a batch
    # that has had none for BATCH_STALL_S.
    advanced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "batches"
        indexes = [models.Index(fields=["tenant", "created_at"]), models.Index(fields=["status"])]

    def __str__(self) -> str:
        return self.id

    @property
    def is_terminal(self) -> bool:
        return self.status in BATCH_TERMINAL_STATUSES


class BatchRequest(models.Model):
    """One line of a batch's input file: its body (validated), and the response that runs it."""

    id = models.CharField(primary_key=True, max_length=64, default=new_batch_request_id, editable=False)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="requests")
    line = models.PositiveIntegerField()  # 0-based, in the input file
    custom_id = models.CharField(max_length=512)
    body = models.JSONField()
    state = models.CharField(max_length=16, choices=BatchRequestState.choices, default=BatchRequestState.QUEUED)
    response_id = models.CharField(max_length=64, blank=True, db_index=True)
    # The responses it has been given (dispatch/batch_slots.py runs a lost one again).
    attempts = models.PositiveSmallIntegerField(default=0)
    # A request refused at create: {"status_code", "body": {"error": ...}}, as the error file gives it.
    error = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "line"], name="batch_request_line_unique")]
        indexes = [models.Index(fields=["batch", "state", "line"])]
