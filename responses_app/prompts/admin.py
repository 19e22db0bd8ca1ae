"""The operator console for prompt templates: every version of every tenant's prompts.
Versions are made through the API (a new version, never an edit), so here they are read."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from responses_app.models import PromptVersion


@admin.register(PromptVersion)
class PromptVersionAdmin(admin.ModelAdmin):
    list_display = ("prompt_id", "version", "tenant", "variables", "created_at")
    list_filter = ("tenant",)
    list_select_related = ("tenant",)
    search_fields = ("prompt_id", "instructions")
    ordering = ("tenant", "prompt_id", "-version")
    fields = ("prompt_id", "version", "tenant", "instructions", "input", "variables", "metadata", "created_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: PromptVersion | None = None) -> bool:
        return False
