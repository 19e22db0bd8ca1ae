"""The operator console for stored chat completions: each tenant's completions with their
model, choices and status, and a completion's page with its request messages, its answer
as the API returns it, and links to its choices' responses. Read-only: completions are
made and deleted through the API."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from responses_app.chat_completions.stored import completion_of
from responses_app.console_display import pretty_json
from responses_app.models import StoredChatCompletion


@admin.register(StoredChatCompletion)
class StoredChatCompletionAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "model", "choice_count", "status", "created_at")
    list_filter = ("tenant", "model")
    list_select_related = ("tenant", "response")
    search_fields = ("=id",)
    ordering = ("-created_at",)
    fields = ("id", "tenant", "model", "metadata", "created_at", "status", "choice_responses", "request_messages",
              "answer")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: StoredChatCompletion | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: StoredChatCompletion | None = None) -> bool:
        return False

    @admin.display(description="choices")
    def choice_count(self, row: StoredChatCompletion) -> int:
        return len(row.choices)

    @admin.display(description="status")
    def status(self, row: StoredChatCompletion) -> str:
        """Its first choice's response's (the API finds it once every choice is answered)."""
        return row.response.status

    @admin.display(description="choices' responses")
    def choice_responses(self, row: StoredChatCompletion) -> SafeString:
        return format_html_join(", ", '<a href="{}">{}</a>', (
            (reverse("admin:responses_app_response_change", args=[quote(pk)]), pk) for pk in row.choices))

    @admin.display(description="messages")
    def request_messages(self, row: StoredChatCompletion) -> SafeString:
        return format_html("<pre>{}</pre>", pretty_json(row.messages))

    @admin.display(description="the completion, as the API returns it")
    def answer(self, row: StoredChatCompletion) -> SafeString | str:
        completion = completion_of(row)
        return format_html("<pre>{}</pre>", pretty_json(completion)) if completion else "not answered"
