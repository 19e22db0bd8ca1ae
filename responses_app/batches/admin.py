"""Batches: operators follow their progress, open their files and responses, and may cancel
one; nothing else is edited here (a batch is the client's)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from responses_app.batches.runner import stop_batch
from responses_app.console_display import pretty_json
from responses_app.dispatch.batch_slots import ADVANCE_BATCH_TASK, send_batch_task
from responses_app.models import Batch


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "model", "status", "progress", "created_at", "expires_at")
    list_filter = ("status", "tenant", "model")
    search_fields = ("=id",)
    list_select_related = ("tenant",)
    ordering = ("-created_at",)
    show_full_result_count = False
    actions = ["cancel_batches"]
    fields = (("status", "tenant", "model", "endpoint", "completion_window"), "progress", "responses",
              ("input_file", "output_file", "error_file"), "metadata", "error_list", "usage",
              ("created_at", "in_progress_at", "finalizing_at", "expires_at"),
              ("completed_at", "failed_at", "expired_at", "cancelling_at", "cancelled_at"))
    readonly_fields = tuple(name for line in fields for name in (line if isinstance(line, tuple) else (line,)))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="progress")
    def progress(self, batch: Batch) -> str:
        ended = batch.completed + batch.failed
        return f"{ended} / {batch.total} ({batch.completed} completed, {batch.failed} failed)"

    @admin.display(description="responses")
    def responses(self, batch: Batch) -> str:
        # The response list searches by batch id (ResponseAdmin.get_search_results).
        url = f"{reverse('admin:responses_app_response_changelist')}?q={batch.pk}"
        return format_html('<a class="batch-responses" href="{}">the responses of this batch</a>', url)

    @admin.display(description="input file")
    def input_file(self, batch: Batch) -> str:
        return _file_link(batch.input_file_id)

    @admin.display(description="output file")
    def output_file(self, batch: Batch) -> str:
        return _file_link(batch.output_file_id)

    @admin.display(description="error file")
    def error_file(self, batch: Batch) -> str:
        return _file_link(batch.error_file_id)

    @admin.display(description="errors")
    def error_list(self, batch: Batch) -> str:
        return format_html("<pre>{}</pre>", pretty_json(batch.errors)) if batch.errors else "-"

    @admin.action(description="Cancel the selected batches", permissions=["cancel"])
    def cancel_batches(self, request: HttpRequest, queryset: QuerySet[Batch]) -> None:
        stopped = 0
        for batch in queryset:
            if not batch.is_terminal:
                stop_batch(batch, expired=False)
                send_batch_task(ADVANCE_BATCH_TASK, batch.pk)
                self.log_change(request, batch, "Cancelled from the admin.")
                stopped += 1
        self.message_user(request, f"{stopped} batch(es) cancelling; ended ones are left as they are.",
                          messages.SUCCESS)

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("responses_app.change_batch")


def _file_link(file_id: str) -> str:
    if not file_id:
        return "-"
    url = reverse("admin:responses_app_storedfile_change", args=[quote(file_id)])
    return format_html('<a href="{}">{}</a>', url, file_id)
