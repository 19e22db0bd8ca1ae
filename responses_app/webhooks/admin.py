"""The operator console for webhook endpoints and their delivery log: every attempt with
its status code and latency, and "send again" for deliveries that failed or were given up."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from responses_app.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from responses_app.webhooks import delivery


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ("name", "tenant", "url", "event_types", "created_at")
    list_filter = ("tenant",)
    list_select_related = ("tenant",)
    search_fields = ("name", "url", "id")
    fields = ("id", "tenant", "name", "url", "event_types", "created_at", "updated_at")
    readonly_fields = ("id", "tenant", "created_at", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # created through the API, which hands the secret to its owner


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    fields = ("attempted_at", "status_code", "latency_ms", "error")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: WebhookDelivery | None = None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ("event_id", "event_type", "response_id", "endpoint", "status", "attempts", "next_attempt_at",
                    "created_at", "delivered_at")
    list_filter = ("status", "event_type", "endpoint__tenant")
    list_select_related = ("endpoint",)
    search_fields = ("event_id", "response_id")
    readonly_fields = ("endpoint", "event_id", "event_type", "response_id", "payload", "status", "attempts",
                       "next_attempt_at", "created_at", "delivered_at")
    inlines = [WebhookAttemptInline]
    actions = ["send_again"]

    @admin.action(description="Send again (same webhook-id and body)")
    def send_again(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        for row in queryset:
            delivery.send_again(row)
            self.log_change(request, row, "Sent again.")
        self.message_user(request, f"{len(queryset)} delivery(ies) queued again.", messages.SUCCESS)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
