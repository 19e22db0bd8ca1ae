"""Persistence for responses: the database is the truth for every stream.

A Response owns its input items, its output items and its numbered stream events.
The worker that holds a response's lease is the only writer of its items and events.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import models

from responses_app.lib.ids import new_id
from responses_app.models.response_params import ResponseParams


class Tenant(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Limits enforced when a response is created (empty: no limit).
    max_concurrent_background = models.PositiveIntegerField(
        null=True, blank=True, help_text="Background responses queued or running at once.")
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True, help_text="Creates per minute.")
    max_output_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="The most output tokens one response may ask for (and its default).")
    response_retention_days = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="Days a stored response is kept after it ends (empty: RESPONSE_RETENTION_DAYS; 0: forever).")
    max_queued_batch_requests = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="Batch requests not yet ended, over all batches (empty: BATCH_MAX_QUEUED_REQUESTS).")

    def __str__(self) -> str:
        return self.name


class ApiKeyScope(models.TextChoices):
    READ_WRITE = "read_write", "Read and write"
    READ_ONLY = "read_only", "Read only (retrieve and stream)"


class EventNames(models.TextChoices):
    """How a key's streams name events where OpenAI and the Open Responses specification
    differ (stream/event_names.py): only the reasoning text events."""

    OPENAI = "openai", "OpenAI (response.reasoning_text.delta): the OpenAI SDKs, Codex, the AI SDK"
    OPEN_RESPONSES = "open_responses", "Open Responses (response.reasoning.delta)"


class ReasoningFields(models.TextChoices):
    """Under which names a key's chat completions give their reasoning: clients read one or
    the other (vLLM renamed reasoning_content to reasoning in 0.16), so both by default."""

    BOTH = "both", "Both: reasoning and reasoning_content"
    REASONING = "reasoning", "reasoning only (vLLM 0.16 and later)"
    REASONING_CONTENT = "reasoning_content", "reasoning_content only (vLLM before 0.16, DeepSeek)"


class ApiKey(models.Model):
    """An API key: a public lookup prefix plus an HMAC of the secret (see auth.py)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    scope = models.CharField(max_length=16, choices=ApiKeyScope.choices, default=ApiKeyScope.READ_WRITE)
    event_names = models.CharField(max_length=16, choices=EventNames.choices, default=EventNames.OPENAI)
    reasoning_fields = models.CharField(max_length=20, choices=ReasoningFields.choices, default=ReasoningFields.BOTH)
    expires_at = models.DateTimeField(null=True, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hmac = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.tenant.name}: {self.name or self.prefix}"


class ResponseStatus(models.TextChoices):
    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"
    INCOMPLETE = "incomplete"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = frozenset(
    {ResponseStatus.COMPLETED, ResponseStatus.FAILED, ResponseStatus.INCOMPLETE, ResponseStatus.CANCELLED}
)
ACTIVE_STATUSES = (ResponseStatus.QUEUED, ResponseStatus.IN_PROGRESS)
# The lifecycle event that ends a stream for each terminal status. A cancelled response
# ends with response.incomplete (status "cancelled"): the SDK parses it as a lifecycle
# event and its strict accumulator accepts it, whereas there is no response.cancelled.
TERMINAL_EVENTS = {
    ResponseStatus.COMPLETED: "response.completed",
    ResponseStatus.FAILED: "response.failed",
    ResponseStatus.INCOMPLETE: "response.incomplete",
    ResponseStatus.CANCELLED: "response.incomplete",
}
TERMINAL_EVENT_TYPES = frozenset(TERMINAL_EVENTS.values())
# The webhook event of each terminal status: unlike a stream, webhooks have response.cancelled.
WEBHOOK_EVENTS = {
    ResponseStatus.COMPLETED: "response.completed",
    ResponseStatus.FAILED: "response.failed",
    ResponseStatus.CANCELLED: "response.cancelled",
    ResponseStatus.INCOMPLETE: "response.incomplete",
}


class DeferredState(models.TextChoices):
    WAITING = "waiting"
    RELEASED = "released"
    PROMOTED = "promoted"
    # A WebSocket lane's response stored behind the one before it (lane_after): sent
    # when that one ends (sessions/lanes.py), not by the dispatcher.
    LANE = "lane"


def new_response_id() -> str:
    return new_id("resp")


class Response(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_response_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="responses")
    model = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=ResponseStatus.choices, default=ResponseStatus.QUEUED)
    background = models.BooleanField(default=False)
    store = models.BooleanField(default=True)
    # The validated request parameters (instructions, tools, sampling, metadata, ...):
    # ResponseParams.to_stored(), read back typed as ``params``.
    request = models.JSONField(default=dict)
    previous_response_id = models.CharField(max_length=64, null=True, blank=True)
    # The conversation it belongs to (conversations/): its items are the prompt's history,
    # and its input and output are appended to it when it ends. A plain id, as
    # previous_response_id is: the Response object still names a deleted conversation.
    conversation_id = models.CharField(max_length=64, blank=True)
    # truncation "auto": the most history items dropped from the start of a turn's prompt
    # to fit the model's context (context/truncation.py); 0 when the whole history fitted.
    truncated_items = models.PositiveIntegerField(default=0)
    # Set on a response an operator re-ran from the admin: the response it copies.
    rerun_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns")
    error = models.JSONField(null=True, blank=True)
    incomplete_details = models.JSONField(null=True, blank=True)
    usage = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    # Job control. cancel_requested is the flag a worker polls; the lease says which
    # worker holds the row and until when (the reaper recovers expired leases).
    task_id = models.CharField(max_length=64, blank=True)
    # When the broker accepted the task; null while it has not (the reaper retries).
    enqueued_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    lease_owner = models.CharField(max_length=128, blank=True)
    # The worker node (settings.NODE_ID) of its last claim: where its prompt's prefix is cached.
    node = models.CharField(max_length=128, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # Continuations of this response by another worker after its own was lost with output
    # written (services/recovery.py); RESPONSE_MAX_RECOVERIES bounds them.
    recoveries = models.PositiveIntegerField(default=0)
    # Highest sequence number committed; lets readers and validators avoid COUNT(*).
    last_sequence_number = models.IntegerField(default=-1)

    # A deferred completion window (background_options.completion_window "2h" / "8h"):
    # the response must end by deadline_at; deferred_state says where the dispatcher
    # (dispatch/deferred.py) has it: waiting in the database, released to the broker at the lowest
    # priority, or promoted to its model's interactive priority. Blank: not deferred.
    deadline_at = models.DateTimeField(null=True, blank=True)
    deferred_state = models.CharField(max_length=16, choices=DeferredState.choices, blank=True)
    # background_options.continuation_id: the deferred responses of one id run in order.
    continuation_id = models.CharField(max_length=256, blank=True)

    # Created over the Responses WebSocket (api/websocket/): the lane (``stream_id``, ""
    # for the default lane) of the socket session that follows it, the response it runs
    # after on that lane, and the socket following it now. detached_at: when that socket
    # went away, so that a foreground response nobody resumes is cancelled (sessions/lanes.py).
    socket_session = models.CharField(max_length=160, blank=True)
    stream_id = models.CharField(max_length=64, blank=True)
    lane_after = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="lane_successors")
    socket_id = models.CharField(max_length=32, blank=True)
    detached_at = models.DateTimeField(null=True, blank=True)
    # Steering input is queued for it (sessions/steering.py): the worker's cancel watch polls this
    # with cancel_requested and ends the response at its next safe boundary.
    steer_requested = models.BooleanField(default=False)
    # Run for a request of this batch (batches/): at the broker's lowest priority, and its
    # end is the request's result.
    batch_id = models.CharField(max_length=64, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "socket_session", "stream_id"]),
            models.Index(fields=["tenant", "-created_at"]),
            models.Index(fields=["status", "lease_expires_at"]),
            # A tenant's responses in progress (the concurrency limits of every create): without
            # it SQLite walked all of a tenant's responses, 21 ms a create after a 50,000-request batch.
            models.Index(fields=["tenant", "status"]),
            # The retention purge: a tenant's responses by end time (tenancy/retention.py).
            models.Index(fields=["tenant", "completed_at"]),
            models.Index(fields=["deferred_state", "deadline_at"]),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def params(self) -> ResponseParams:
        """The stored request parameters, typed (a row of any age). Read once per value of
        ``request`` (which no code changes in place): a response's worker and its response
        objects read them many times, and typing a request's tools is not free."""
        request = self.request
        cached = self.__dict__.get("_params")
        if cached is None or cached[0] is not request:
            cached = self.__dict__["_params"] = (request, ResponseParams.from_stored(request))
        return cached[1]


class InputItem(models.Model):
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="input_items")
    position = models.PositiveIntegerField()
    item_id = models.CharField(max_length=64)
    data = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["response", "position"], name="input_item_position_unique")]
        # An item_reference names an item by its id alone (selectors.referenced_item).
        indexes = [models.Index(fields=["item_id"])]
        ordering = ["position"]


class OutputItem(models.Model):
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="output_items")
    output_index = models.PositiveIntegerField()
    item_id = models.CharField(max_length=64)
    item_type = models.CharField(max_length=40)
    status = models.CharField(max_length=16, blank=True)
    data = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["response", "output_index"], name="output_item_index_unique")]
        indexes = [models.Index(fields=["item_id"])]
        ordering = ["output_index"]


class ResponseEvent(models.Model):
    """One stream event exactly as sent on the wire: ``data`` is its JSON text, byte for
    byte the SSE ``data:`` line (text, not JSON: PostgreSQL's jsonb would reorder the keys,
    and a replay must be the bytes that the live stream sent)."""

    id = models.BigAutoField(primary_key=True)
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="events")
    sequence_number = models.IntegerField()
    type = models.CharField(max_length=64)
    data = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["response", "sequence_number"], name="event_sequence_unique"),
        ]
        ordering = ["sequence_number"]

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.data)


class EventLog(models.Model):
    """A finished response's events packed into one block (stream/event_log.py): its SSE
    frames, concatenated and zstd-compressed, and the byte length of each frame, so that
    a replay can start after any sequence number. Its rows in ResponseEvent are gone."""

    response = models.OneToOneField(Response, primary_key=True, on_delete=models.CASCADE, related_name="event_log")
    event_count = models.PositiveIntegerField()
    raw_bytes = models.PositiveBigIntegerField(help_text="The frames' size before compression.")
    frames = models.BinaryField()
    # uint32 little-endian per frame, zstd-compressed.
    frame_lengths = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)


class TenantDailyUsage(models.Model):
    """Tokens a tenant's responses used, per UTC day (added when each response ends)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="daily_usage")
    day = models.DateField()
    responses = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    reasoning_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "day"], name="tenant_daily_usage_unique")]
        ordering = ["-day"]
        verbose_name_plural = "tenant daily usage"
