"""Files of the Files API: operators look (and may delete one, with its bytes), never edit."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from responses_app.files import store
from responses_app.models import StoredFile


@admin.register(StoredFile)
class StoredFileAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "filename", "purpose", "bytes", "created_at", "expires_at")
    list_filter = ("purpose",)
    search_fields = ("=id", "filename")
    list_select_related = ("tenant",)
    ordering = ("-created_at",)
    readonly_fields = ("id", "tenant", "filename", "purpose", "bytes", "storage_name", "created_at", "expires_at")
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: StoredFile) -> None:
        store.delete_row(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[StoredFile]) -> None:
        for row in queryset:
            store.delete_row(row)
