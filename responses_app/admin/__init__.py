"""The Django admin is the operator console: one module per area."""

from responses_app.admin import responses, tenants

__all__ = ["responses", "tenants"]
