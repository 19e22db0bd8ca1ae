"""The Django admin is the operator console: one module per area."""

from responses_app.admin import (
    batches,
    conversations,
    files,
    prompts,
    responses,
    schedules,
    tenants,
    vector_stores,
    webhooks,
)

__all__ = ["batches", "conversations", "files", "prompts", "responses", "schedules", "tenants", "vector_stores",
           "webhooks"]
