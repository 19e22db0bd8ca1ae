"""The operator console for tenants, their limits, daily usage and API keys.

A key's plaintext exists once: on the page the add view returns, rendered straight into
that response (never via the messages framework, whose cookie storage would put it in a
cookie) and sent with Cache-Control: no-store. Afterwards only the prefix is shown.
"""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone

from responses_app.models import ApiKey, Tenant, TenantDailyUsage
from responses_app.tenancy.api_keys import create_api_key, revoke_api_key

USAGE_INLINE_DAYS = 31


class TenantDailyUsageInline(admin.TabularInline):
    """The last month of usage, newest first (read-only: the workers write it)."""

    model = TenantDailyUsage
    fields = ("day", "responses", "input_tokens", "output_tokens", "reasoning_tokens")
    readonly_fields = fields
    ordering = ("-day",)
    extra = 0
    verbose_name_plural = f"daily usage (last {USAGE_INLINE_DAYS} days, UTC)"

    def get_queryset(self, request: HttpRequest) -> QuerySet[TenantDailyUsage]:
        # Capped by date, not by slicing: the inline formset filters the queryset further,
        # which a sliced queryset cannot be.
        since = timezone.now().astimezone(UTC).date() - timedelta(days=USAGE_INLINE_DAYS - 1)
        return super().get_queryset(request).filter(day__gte=since)

    def has_add_permission(self, request: HttpRequest, obj: Tenant | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Tenant | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Tenant | None = None) -> bool:
        return False


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("name", "max_concurrent_background", "requests_per_minute", "max_output_tokens", "created_at")
    search_fields = ("name",)
    fields = ("name", "max_concurrent_background", "requests_per_minute", "max_output_tokens",
              "response_retention_days", "max_queued_batch_requests", "created_at")
    readonly_fields = ("created_at",)
    inlines = [TenantDailyUsageInline]


@admin.register(TenantDailyUsage)
class TenantDailyUsageAdmin(admin.ModelAdmin):
    list_display = ("day", "tenant", "responses", "input_tokens", "output_tokens", "reasoning_tokens")
    list_filter = ("tenant",)
    list_select_related = ("tenant",)
    date_hierarchy = "day"
    ordering = ("-day", "tenant__name")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: TenantDailyUsage | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: TenantDailyUsage | None = None) -> bool:
        return False


class ApiKeyAddForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ("tenant", "name", "scope", "event_names", "reasoning_fields", "expires_at")

    def clean_expires_at(self) -> Any:
        expires_at = self.cleaned_data.get("expires_at")
        if expires_at is not None and expires_at <= timezone.now():
            raise forms.ValidationError("A new key must expire in the future.")
        return expires_at


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "name", "tenant", "scope", "event_names", "reasoning_fields", "expires_at",
                    "last_used_at", "revoked_at")
    list_filter = ("tenant", "scope", "event_names")
    list_select_related = ("tenant",)
    search_fields = ("prefix", "name", "tenant__name")
    actions = ["revoke_keys"]
    add_form = ApiKeyAddForm
    change_form_template = "admin/responses_app/apikey/change_form.html"
    created_template = "admin/responses_app/apikey/created.html"

    def get_form(self, request: HttpRequest, obj: ApiKey | None = None, change: bool = False,
                 **kwargs: Any) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = self.add_form
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("tenant", "name", "scope", "event_names", "reasoning_fields", "expires_at")
        return ("tenant", "name", "scope", "event_names", "reasoning_fields", "prefix", "expires_at", "created_at",
                "last_used_at", "revoked_at")

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        if obj is None:
            return ()
        return ("tenant", "scope", "prefix", "created_at", "last_used_at", "revoked_at")

    def save_model(self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        # Keys are made in one place (auth.create_api_key): it alone sees the secret.
        key, plaintext = create_api_key(obj.tenant.name, obj.name, scope=obj.scope, expires_at=obj.expires_at,
                                        event_names=obj.event_names, reasoning_fields=obj.reasoning_fields)
        obj.pk = key.pk
        obj.refresh_from_db()
        obj._state.adding = False
        obj.plaintext_once = plaintext  # read by response_add below, then gone with the request

    def response_add(self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "API key created",
            "key": obj,
            "plaintext": obj.plaintext_once,
            "change_url": reverse("admin:responses_app_apikey_change", args=[obj.pk]),
            "changelist_url": reverse("admin:responses_app_apikey_changelist"),
        }
        page = TemplateResponse(request, self.created_template, context)
        page["Cache-Control"] = "no-store"
        return page

    def get_urls(self) -> list[URLPattern]:
        revoke = self.admin_site.admin_view(self.revoke_view)
        return [path("<path:object_id>/revoke/", revoke, name="responses_app_apikey_revoke"), *super().get_urls()]

    def revoke_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        key = get_object_or_404(ApiKey, pk=object_id)
        if not self.has_change_permission(request, key):
            return HttpResponse(status=403)
        if self._revoke(request, key):
            self.message_user(request, f"Revoked key {key.prefix}.", messages.SUCCESS)
        else:
            self.message_user(request, f"Key {key.prefix} was already revoked.", messages.WARNING)
        return HttpResponseRedirect(reverse("admin:responses_app_apikey_change", args=[key.pk]))

    @admin.action(description="Revoke selected keys (irreversible)", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = sum(self._revoke(request, key) for key in queryset.filter(revoked_at__isnull=True))
        self.message_user(request, f"Revoked {revoked} key(s).", messages.SUCCESS)

    def _revoke(self, request: HttpRequest, key: ApiKey) -> bool:
        revoked = revoke_api_key(key)
        if revoked:
            self.log_change(request, key, "Revoked the key.")
        return revoked
