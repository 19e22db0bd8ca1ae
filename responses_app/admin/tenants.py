"""The operator console for tenants and their API keys."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from responses_app.models import ApiKey, Tenant


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are created with `manage.py create_api_key` (the plaintext is shown once there)."""

    list_display = ("prefix", "name", "tenant", "created_at", "last_used_at", "revoked_at")
    list_filter = ("tenant",)
    list_select_related = ("tenant",)
    search_fields = ("prefix", "name", "tenant__name")
    readonly_fields = ("tenant", "prefix", "secret_hmac", "created_at", "last_used_at", "revoked_at")
    fields = ("tenant", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke_keys"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke selected keys (irreversible)", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {revoked} key(s).", messages.SUCCESS)
