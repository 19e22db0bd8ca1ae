"""The operator console for conversations: their metadata, the response working on one
now, and their items in order, each with the response it came from. Read-only: items
are written by the API and by the responses that run on a conversation."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from responses_app.console_display import compact_json, item_view
from responses_app.models import Conversation, ConversationItem

PREVIEW_CHARS = 160


def response_link(response_id: str | None) -> str:
    if not response_id:
        return "-"
    url = reverse("admin:responses_app_response_change", args=[quote(response_id)])
    return format_html('<a href="{}">{}</a>', url, response_id)


class ConversationItemInline(admin.TabularInline):
    model = ConversationItem
    fields = ("position", "item_id", "item_type", "role", "preview", "from_response", "created_at")
    readonly_fields = fields
    ordering = ("position",)
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Conversation | None = None) -> bool:
        return False

    @admin.display(description="role")
    def role(self, item: ConversationItem) -> str:
        return item.data.get("role", "")

    @admin.display(description="content")
    def preview(self, item: ConversationItem) -> str:
        view = item_view(item.data)
        parts = view.get("parts") or []
        text = " ".join(part["text"] for part in parts) if parts else compact_json(item.data)
        return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"

    @admin.display(description="response")
    def from_response(self, item: ConversationItem) -> str:
        return response_link(item.response_id)


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "created_at", "updated_at", "active")
    list_filter = ("tenant",)
    list_select_related = ("tenant",)
    search_fields = ("id",)
    fields = ("id", "tenant", "metadata", "created_at", "updated_at", "active")
    readonly_fields = fields
    inlines = [ConversationItemInline]

    @admin.display(description="response working on it")
    def active(self, conversation: Conversation) -> str:
        return response_link(conversation.active_response_id)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # created through the API
