"""The operator console for responses: their items and events.

Event tables grow to millions of rows, so nothing here counts them: the timeline is
paged by sequence number, and its length is the response's last_sequence_number.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from responses_app import services
from responses_app.models import OutputItem, Response, ResponseEvent

EVENTS_PER_PAGE = 100


class OutputItemInline(admin.TabularInline):
    model = OutputItem
    fields = ("output_index", "item_id", "item_type", "status", "data")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("output_index",)

    def has_add_permission(self, request: HttpRequest, obj: Response | None = None) -> bool:
        return False


@admin.register(Response)
class ResponseAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant", "model", "status", "background", "store", "created_at", "completed_at")
    list_filter = ("status", "model", "background", "tenant")
    search_fields = ("=id",)
    list_select_related = ("tenant",)
    show_full_result_count = False
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    inlines = [OutputItemInline]
    actions = ["cancel_responses"]
    readonly_fields = [field.name for field in Response._meta.fields]
    change_form_template = "admin/responses_app/response/change_form.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # responses are created through the API

    @admin.action(description="Cancel selected background responses", permissions=["change"])
    def cancel_responses(self, request: HttpRequest, queryset: QuerySet[Response]) -> None:
        cancelled = 0
        for response in queryset.filter(background=True):
            if not response.is_terminal:
                services.request_cancel(response)
                cancelled += 1
        self.message_user(request, f"Cancel requested for {cancelled} response(s).", messages.SUCCESS)

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict | None = None) -> HttpResponse:
        extra_context = dict(extra_context or {})
        response = Response.objects.filter(pk=object_id).only("last_sequence_number").first()
        if response is not None:
            try:
                after = int(request.GET.get("events_after", -1))
            except ValueError:
                after = -1
            events = list(ResponseEvent.objects.filter(response_id=object_id, sequence_number__gt=after)
                          .order_by("sequence_number").values("sequence_number", "type", "data")[:EVENTS_PER_PAGE])
            extra_context.update(
                events=events,
                events_after=after,
                events_total=response.last_sequence_number + 1,
                events_next=events[-1]["sequence_number"] if events and
                events[-1]["sequence_number"] < response.last_sequence_number else None,
                events_previous=max(after - EVENTS_PER_PAGE, -1) if after >= 0 else None,
            )
        return super().change_view(request, object_id, form_url, extra_context)
