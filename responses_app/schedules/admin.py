"""The operator console for scheduled responses: their schedule, next run and runs
(created or skipped, with the reason), enable / disable, and "run now"."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from responses_app.models import RunStatus, ScheduledResponse, ScheduledRun
from responses_app.schedules import runs, service


class ScheduledRunInline(admin.TabularInline):
    model = ScheduledRun
    fields = ("created_at", "tick", "status", "response_link", "reason", "manual")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("-created_at",)

    @admin.display(description="response")
    def response_link(self, run: ScheduledRun) -> str:
        if run.response_id is None:
            return "—"
        return format_html('<a href="{}">{}</a>', reverse("admin:responses_app_response_change",
                                                          args=[run.response_id]), run.response_id)

    def has_add_permission(self, request: HttpRequest, obj: ScheduledResponse | None = None) -> bool:
        return False


@admin.register(ScheduledResponse)
class ScheduledResponseAdmin(admin.ModelAdmin):
    list_display = ("name", "tenant", "schedule", "enabled", "next_run", "runs_created", "runs_skipped")
    list_filter = ("enabled", "tenant")
    list_select_related = ("tenant", "periodic_task", "periodic_task__clocked")
    search_fields = ("name", "id")
    fields = ("id", "tenant", "name", "schedule", "request", "enabled", "next_run", "created_at", "updated_at")
    readonly_fields = fields
    inlines = [ScheduledRunInline]
    actions = ["run_now", "enable", "disable"]

    @admin.display(description="next run")
    def next_run(self, schedule: ScheduledResponse) -> str:
        at = service.next_run(schedule)
        return at.strftime("%Y-%m-%d %H:%M:%S UTC") if at else "—"

    @admin.display(description="runs")
    def runs_created(self, schedule: ScheduledResponse) -> int:
        return schedule.runs.filter(status=RunStatus.CREATED).count()

    @admin.display(description="skipped")
    def runs_skipped(self, schedule: ScheduledResponse) -> int:
        return schedule.runs.filter(status=RunStatus.SKIPPED).count()

    @admin.action(description="Run now")
    def run_now(self, request: HttpRequest, queryset: QuerySet[ScheduledResponse]) -> None:
        for schedule in queryset:
            run = runs.run_scheduled(schedule.pk, manual=True)
            if run is not None and run.status == RunStatus.CREATED:
                self.log_change(request, schedule, f"Ran now as {run.response_id}.")
                self.message_user(request, f"{schedule.name}: created {run.response_id}.", messages.SUCCESS)
            else:
                reason = run.reason if run is not None else "the schedule is gone"
                self.message_user(request, f"{schedule.name}: skipped ({reason}).", messages.WARNING)

    @admin.action(description="Enable")
    def enable(self, request: HttpRequest, queryset: QuerySet[ScheduledResponse]) -> None:
        for schedule in queryset:
            service.set_enabled(schedule, True)
            self.log_change(request, schedule, "Enabled.")

    @admin.action(description="Disable")
    def disable(self, request: HttpRequest, queryset: QuerySet[ScheduledResponse]) -> None:
        for schedule in queryset:
            service.set_enabled(schedule, False)
            self.log_change(request, schedule, "Disabled.")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # created through the API, where the request is validated
