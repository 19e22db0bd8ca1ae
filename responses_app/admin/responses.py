"""The operator console for responses: list, read, tail live, cancel, re-run, delete.

Event tables grow to millions of rows, so nothing here counts or collects them: the
timeline is paged by sequence number, its length is the response's
last_sequence_number, and deletion goes through delete_response instead of
Django's collector (whose confirmation page would load every event to list it).

Responses are written by workers while an operator looks at them, so the change form
never saves: every field is read-only and a POST to it is refused. Changes happen only
through the actions, each of which calls a service and writes an admin LogEntry.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from responses_app import console_display as display
from responses_app import selectors
from responses_app.admin import live_tail
from responses_app.admin.response_columns import ResponseColumns
from responses_app.models import TERMINAL_EVENT_TYPES, Response
from responses_app.services.cancel import delete_response, request_cancel, rerun_response
from responses_app.stream import event_log
from responses_app.wire.errors import APIError

EVENTS_PER_PAGE = 100


def stream_event_types() -> list[str]:
    """Every event type the SDK knows. The browser's EventSource only delivers named SSE
    events to listeners registered by name, and our frames are named by type."""
    import typing

    from openai.types.responses import ResponseStreamEvent

    union = typing.get_args(ResponseStreamEvent)[0]
    return sorted({typing.get_args(model.model_fields["type"].annotation)[0] for model in typing.get_args(union)})


STREAM_EVENT_TYPES = stream_event_types()


def metadata_matches(term: str) -> Q:
    """Responses whose metadata (``request["metadata"]``, a dict of strings) contains
    ``term``, ignoring case, on PostgreSQL and SQLite alike.

    The lookup runs over the JSON text of the metadata object (PostgreSQL's ``->>`` and
    SQLite's JSON_EXTRACT both give it). SQLite keeps the text as Django wrote it, with
    non-ASCII characters and quotes escaped, so the escaped spelling is searched too.
    """
    query = Q(request__metadata__icontains=term)
    escaped = json.dumps(term)[1:-1]
    if escaped != term:
        query |= Q(request__metadata__icontains=escaped)
    return query


@admin.register(Response)
class ResponseAdmin(ResponseColumns, admin.ModelAdmin):
    list_display = ("id", "tenant", "model", "status_badge", "background", "created_at", "duration", "tokens")
    list_filter = ("status", "tenant", "model", "background", ("created_at", admin.DateFieldListFilter))
    search_fields = ("=id",)  # shows the search box; get_search_results does the searching
    search_help_text = "A response id, a batch id (its responses), or text found in its metadata values."
    list_select_related = ("tenant",)
    list_per_page = 50
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # facet counts over a large table, one per filter choice
    ordering = ("-created_at",)
    actions = ["cancel_responses", "rerun_responses", "delete_responses"]
    fieldsets = (
        (None, {"fields": (("status_badge", "tenant", "model", "background", "store"),
                           ("created_at", "started_at", "completed_at", "duration", "node"),
                           ("previous_response", "conversation", "truncated_items", "rerun_of", "reruns"))}),
        ("WebSocket", {"classes": ("collapse",),
                       "fields": (("socket_session", "stream_id", "lane_after_link", "detached_at"), "steering")}),
        ("Job control", {"classes": ("collapse",),
                         "fields": (("task_id", "enqueued_at", "attempts"),
                                    ("lease_owner", "lease_expires_at", "cancel_requested"), "last_sequence_number")}),
    )
    readonly_fields = tuple(name for _, options in fieldsets for line in options["fields"]
                            for name in (line if isinstance(line, tuple) else (line,)))
    change_form_template = "admin/responses_app/response/change_form.html"
    delete_confirmation_template = "admin/responses_app/response/delete_confirmation.html"
    delete_selected_confirmation_template = "admin/responses_app/response/delete_selected_confirmation.html"

    # --- the list ---------------------------------------------------------------------------

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Response],
                           search_term: str) -> tuple[QuerySet[Response], bool]:
        # Filters the queryset it is given (list filters already applied), never OR-ing
        # a fresh queryset in, which would drop those filters.
        term = search_term.strip()
        if not term:
            return queryset, False
        if term.startswith("batch_"):  # a batch's responses (linked from the batch's page)
            return queryset.filter(batch_id=term), False
        return queryset.filter(Q(pk=term) | metadata_matches(term)), False

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        # Django's own delete collects (and lists) every related event first.
        actions.pop("delete_selected", None)
        return actions

    # --- permissions and writes -------------------------------------------------------------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # responses are created through the API

    def save_model(self, request: HttpRequest, obj: Response, form: Any, change: bool) -> None:
        """Never: a full save of a form's stale copy would overwrite the worker's writes."""

    def delete_model(self, request: HttpRequest, obj: Response) -> None:
        delete_response(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Response]) -> None:
        for response in queryset:
            delete_response(response)

    def get_urls(self) -> list[URLPattern]:
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            # Async and staff-authenticated on its own: admin_view would wrap it as sync.
            path("<path:object_id>/events/", live_tail.response_events, name=f"{prefix}_events"),
            path("<path:object_id>/cancel/", self.admin_site.admin_view(self.cancel_view), name=f"{prefix}_cancel"),
            path("<path:object_id>/rerun/", self.admin_site.admin_view(self.rerun_view), name=f"{prefix}_rerun"),
            *super().get_urls(),
        ]

    # --- the detail page ----------------------------------------------------------------------

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict | None = None) -> HttpResponse:
        if request.method == "POST":
            return HttpResponseNotAllowed(["GET"])  # read-only: see the module docstring
        return super().change_view(request, object_id, form_url, extra_context)

    def render_change_form(self, request: HttpRequest, context: dict[str, Any], add: bool = False,
                           change: bool = False, form_url: str = "", obj: Response | None = None) -> HttpResponse:
        if obj is not None:
            timeline = self._timeline_context(request, obj)
            if not obj.is_terminal and any(event["type"] in TERMINAL_EVENT_TYPES for event in timeline["events"]):
                # It ended between the read of its row and of its events (the terminal event
                # and the row's status are one write): show it ended, not a live tail that
                # has nothing left to tail and a status badge that no event will update.
                obj.refresh_from_db()
                timeline = self._timeline_context(request, obj)
            context.update(self._reader_context(obj))
            context.update(timeline)
            context.update(self._actions_context(request, obj))
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _reader_context(self, response: Response) -> dict[str, Any]:
        inputs = selectors.input_items(response)
        outputs = selectors.output_items(response)  # a running response's open item as streamed so far
        return {
            "reader": display.request_view(response.request),
            "input_views": [display.item_view(item) for item in inputs],
            "output_views": [display.item_view(item) for item in outputs],
            "usage_rows": display.usage_view(response.usage),
            "error_json": display.pretty_json(response.error) if response.error else "",
            "incomplete_json": display.pretty_json(response.incomplete_details) if response.incomplete_details else "",
        }

    def _timeline_context(self, request: HttpRequest, response: Response) -> dict[str, Any]:
        """One page of events after ``events_after``, and where the live tail starts."""
        try:
            after = max(int(request.GET.get("events_after", -1)), -1)
        except ValueError:
            after = -1
        events = [{"sequence_number": seq, "type": kind, "json": display.compact_json(data)}
                  for seq, kind, data in event_log.events(response.pk, after, EVENTS_PER_PAGE)]
        last_shown = events[-1]["sequence_number"] if events else after
        return {
            "events": events,
            "events_after": after,
            "events_total": response.last_sequence_number + 1,
            "events_next": last_shown if events and last_shown < response.last_sequence_number else None,
            "events_previous": max(after - EVENTS_PER_PAGE, -1) if after >= 0 else None,
            "live_tail": None if response.is_terminal else {
                "url": reverse("admin:responses_app_response_events", args=[quote(response.pk)]),
                "after": last_shown,
                "types": STREAM_EVENT_TYPES,
                "terminal_types": sorted(TERMINAL_EVENT_TYPES),
            },
        }

    def _actions_context(self, request: HttpRequest, response: Response) -> dict[str, Any]:
        can_change = self.has_change_permission(request, response)
        return {
            "can_cancel": can_change and response.background and not response.is_terminal,
            "can_rerun": can_change,
            "can_delete": self.has_delete_permission(request, response),
            "cancel_url": reverse("admin:responses_app_response_cancel", args=[quote(response.pk)]),
            "rerun_url": reverse("admin:responses_app_response_rerun", args=[quote(response.pk)]),
            "delete_url": reverse("admin:responses_app_response_delete", args=[quote(response.pk)]),
        }

    # --- single actions (buttons on the detail page) -------------------------------------------

    def _response_for_action(self, request: HttpRequest, object_id: str, permission: str) -> Response:
        if request.method != "POST":
            raise PermissionDenied("Actions are POSTs.")
        response = self.get_object(request, unquote(object_id))
        if response is None:
            raise Http404("No such response.")
        allowed = (self.has_delete_permission(request, response) if permission == "delete"
                   else self.has_change_permission(request, response))
        if not allowed:
            raise PermissionDenied
        return response

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        response = self._response_for_action(request, object_id, "change")
        if self._cancel(request, response):
            self.message_user(request, f"Cancel requested for {response.pk}.", messages.SUCCESS)
        else:
            self.message_user(request, f"{response.pk} is not a running background response.", messages.WARNING)
        return HttpResponseRedirect(self._change_url(response.pk))

    def rerun_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        response = self._response_for_action(request, object_id, "change")
        rerun = self._rerun(request, response)
        if rerun is None:
            return HttpResponseRedirect(self._change_url(response.pk))
        self.message_user(request, f"Re-running {response.pk} as {rerun.pk}.", messages.SUCCESS)
        return HttpResponseRedirect(self._change_url(rerun.pk))

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: dict | None = None) -> HttpResponse:
        response = self.get_object(request, unquote(object_id))
        if response is None:
            raise Http404("No such response.")
        if not self.has_delete_permission(request, response):
            raise PermissionDenied
        if request.method == "POST":
            self._delete(request, response)
            self.message_user(request, f"Deleted {response.pk}.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:responses_app_response_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "title": "Are you sure?",
            "subtitle": response.pk,
            "opts": self.opts,
            "object": response,
            "events_total": response.last_sequence_number + 1,
            **(extra_context or {}),
        }
        return TemplateResponse(request, self.delete_confirmation_template, context)

    def _cancel(self, request: HttpRequest, response: Response) -> bool:
        if not response.background or response.is_terminal:
            return False
        request_cancel(response)
        self.log_change(request, response, "Requested cancel.")
        return True

    def _rerun(self, request: HttpRequest, response: Response) -> Response | None:
        try:
            rerun = rerun_response(response)
        except APIError as error:  # the request no longer validates (its previous response is gone, ...)
            self.message_user(request, f"Could not re-run {response.pk}: {error.message}", messages.ERROR)
            return None
        self.log_change(request, response, f"Re-ran as {rerun.pk}.")
        self.log_addition(request, rerun, f"Re-run of {response.pk}.")
        return rerun

    def _delete(self, request: HttpRequest, response: Response) -> None:
        self.log_deletions(request, [response])  # before: the entry needs the row's id
        delete_response(response)

    # --- bulk actions (the list) ---------------------------------------------------------------

    @admin.action(description="Cancel selected background responses", permissions=["change"])
    def cancel_responses(self, request: HttpRequest, queryset: QuerySet[Response]) -> None:
        cancelled = sum(self._cancel(request, response) for response in queryset.filter(background=True))
        self.message_user(request, f"Cancel requested for {cancelled} response(s).", messages.SUCCESS)

    @admin.action(description="Re-run selected responses (as new background responses)", permissions=["change"])
    def rerun_responses(self, request: HttpRequest, queryset: QuerySet[Response]) -> None:
        reruns = [rerun for response in queryset if (rerun := self._rerun(request, response)) is not None]
        if reruns:
            self.message_user(request, f"Started {len(reruns)} re-run(s): {', '.join(r.pk for r in reruns)}.",
                              messages.SUCCESS)

    @admin.action(description="Delete selected responses, with their items and events", permissions=["delete"])
    def delete_responses(self, request: HttpRequest, queryset: QuerySet[Response]) -> HttpResponse | None:
        if request.POST.get("post") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "title": "Are you sure?",
                "opts": self.opts,
                "responses": list(queryset.values_list("id", "status")),
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, self.delete_selected_confirmation_template, context)
        deleted = 0
        for response in queryset:
            self._delete(request, response)
            deleted += 1
        self.message_user(request, f"Deleted {deleted} response(s).", messages.SUCCESS)
        return None
