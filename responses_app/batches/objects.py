"""A batch as the Batch API answers with it."""

from __future__ import annotations

from typing import Any

from responses_app.models import Batch


def batch_object(batch: Batch) -> dict[str, Any]:
    """A batch (batches/) as ``client.batches`` types it (Batch)."""
    def at(value: Any) -> int | None:
        return int(value.timestamp()) if value else None

    return {
        "id": batch.pk, "object": "batch", "endpoint": batch.endpoint, "model": batch.model or None,
        "input_file_id": batch.input_file_id, "completion_window": batch.completion_window, "status": batch.status,
        "output_file_id": batch.output_file_id or None, "error_file_id": batch.error_file_id or None,
        "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
        "request_counts": {"total": batch.total, "completed": batch.completed, "failed": batch.failed},
        "usage": batch.usage, "metadata": batch.metadata,
        **{name: at(getattr(batch, name)) for name in (
            "created_at", "in_progress_at", "expires_at", "finalizing_at", "completed_at", "failed_at", "expired_at",
            "cancelling_at", "cancelled_at")},
    }
