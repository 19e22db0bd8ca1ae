"""The create request, as validation makes it and the services store it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from responses_app.models.response_params import ResponseParams


@dataclass(frozen=True)
class CreateRequest:
    """A validated create request. ``params`` is what the Response row stores (to_stored) and echoes."""

    model: str
    input_items: list[dict[str, Any]]
    stream: bool
    background: bool
    store: bool
    previous_response_id: str | None
    params: ResponseParams = field(default_factory=ResponseParams)
    # background_options: "soonest" runs now; "2h" / "8h" are deferred (dispatch/deferred.py).
    completion_window: str = "soonest"
    continuation_id: str = ""
    # conversation=: its items are the prompt's history and it gets this response's items.
    conversation_id: str = ""
    # Over the Responses WebSocket: the socket session and lane (stream_id) the response
    # belongs to and the socket following it. ``joins_lane``: it waits behind the lane's
    # running response (a steered successor runs next instead: continue_steered).
    socket_session: str = ""
    stream_id: str = ""
    socket_id: str = ""
    joins_lane: bool = True
    # The store=false response its socket holds (the last one it created), which it may
    # continue as an Open Responses WebSocket does; "" over HTTP.
    socket_held_response: str = ""
    # generate=false (WebSocket): the response is stored with its input and completes at
    # once with no output, for a later previous_response_id (Codex's prewarm).
    generate: bool = True
    # Run for a request of this batch (batches/runner.py): no tenant concurrency quota, the
    # broker's lowest priority.
    batch_id: str = ""
