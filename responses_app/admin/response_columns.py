"""The response pages' columns and read-only fields: status, duration, tokens, and links to
the responses and conversation a response is tied to."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from responses_app.models import Response

RERUNS_SHOWN = 20


class ResponseColumns:
    """What ResponseAdmin shows of a response beside its stored fields."""

    @admin.display(description="status", ordering="status")
    def status_badge(self, response: Response) -> str:
        return format_html('<span class="response-status status-{}" data-status="{}">{}</span>',
                           response.status, response.status, response.status)

    @admin.display(description="duration")
    def duration(self, response: Response) -> str:
        """Creation to completion (what the client waited); still counting while it runs."""
        if response.created_at is None:
            return "-"
        end = response.completed_at or timezone.now()
        seconds = (end - response.created_at).total_seconds()
        return f"{seconds:.1f} s" if response.completed_at else f"{seconds:.1f} s so far"

    @admin.display(description="tokens")
    def tokens(self, response: Response) -> str:
        usage = response.usage or {}
        if usage.get("total_tokens") is None:
            return "-"
        return format_html('<span title="{} in, {} out">{}</span>', usage.get("input_tokens"),
                           usage.get("output_tokens"), usage["total_tokens"])

    @admin.display(description="previous response")
    def previous_response(self, response: Response) -> str:
        if not response.previous_response_id:
            return "-"
        return format_html('<a href="{}">{}</a>', self._change_url(response.previous_response_id),
                           response.previous_response_id)

    @admin.display(description="conversation")
    def conversation(self, response: Response) -> str:
        if not response.conversation_id:
            return "-"
        url = reverse("admin:responses_app_conversation_change", args=[quote(response.conversation_id)])
        return format_html('<a href="{}">{}</a>', url, response.conversation_id)

    @admin.display(description="re-runs")
    def reruns(self, response: Response) -> str:
        reruns = list(response.reruns.order_by("-created_at").values_list("id", "status")[:RERUNS_SHOWN])
        if not reruns:
            return "-"
        return format_html_join(", ", '<a class="rerun-link" href="{}">{}</a> ({})',
                                ((self._change_url(pk), pk, status) for pk, status in reruns))

    @admin.display(description="runs after (lane)")
    def lane_after_link(self, response: Response) -> str:
        if not response.lane_after_id:
            return "-"
        return format_html('<a href="{}">{}</a>', self._change_url(response.lane_after_id), response.lane_after_id)

    @admin.display(description="steering input")
    def steering(self, response: Response) -> str:
        """Each steer sent to this response: its state and, once committed, its successor."""
        steers = list(response.steers.all())
        if not steers:
            return "-"
        return format_html_join(
            "", '<div class="steer" data-state="{}">{} <b>{}</b>{} {}</div>',
            ((steer.state, steer.pk, steer.state,
              format_html(' → <a href="{}">{}</a>', self._change_url(steer.successor_id), steer.successor_id)
              if steer.successor_id else "", steer.error_code) for steer in steers))

    def _change_url(self, response_id: str) -> str:
        return reverse("admin:responses_app_response_change", args=[quote(response_id)])
