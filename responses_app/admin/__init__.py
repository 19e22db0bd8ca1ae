"""The Django admin is the operator console: one module per area."""

from responses_app.admin import responses, schedules, tenants, webhooks

__all__ = ["responses", "schedules", "tenants", "webhooks"]
