"""The Django admin is the operator console: one module per area."""

from responses_app.admin import conversations, responses, schedules, tenants, webhooks

__all__ = ["conversations", "responses", "schedules", "tenants", "webhooks"]
