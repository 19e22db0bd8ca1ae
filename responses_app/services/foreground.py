"""What the view of a foreground create waits on: the response's end, or its stream from
response.created. Its client is its only reader, so a client that hangs up first cancels it
(the views of responses, compactions and chat completions share this)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator

from responses_app.lib.asyncdb import db
from responses_app.models import Response
from responses_app.services.cancel import cancel_by_id
from responses_app.stream.event_log import Frames
from responses_app.stream.reader import ResponseGone, follow_frames, wait_until_finished
from responses_app.stream.sse import sse_frame
from responses_app.wire.errors import NotFound


async def until_finished(response_id: str) -> Response:
    """The response once it ends; a 404 if it is deleted first."""
    try:
        return await wait_until_finished(response_id)
    except ResponseGone:
        raise NotFound(f"Response with id '{response_id}' was deleted.", param="response_id") from None


async def finished_or_cancelled(response_id: str) -> Response:
    """The response once it ends; cancelled if the client hangs up first."""
    try:
        return await until_finished(response_id)
    except asyncio.CancelledError:
        await db(cancel_by_id)(response_id)
        raise


def frames_from_created(response: Response, cancel_on_hang_up: bool) -> AsyncIterator[bytes | None]:
    """The SSE frames of a response just created (``create_response``'s response, which
    carries its response.created event): that event at once, then the rest as it commits.
    ``cancel_on_hang_up``: a foreground stream, whose client is its only reader."""
    on_disconnect = functools.partial(cancel_by_id, response.pk) if cancel_on_hang_up else None
    created = Frames(sse_frame(response.created_event), last_sequence_number=0, ends=False)
    return follow_frames(response.pk, -1, on_disconnect=on_disconnect, committed=created, error_events=True)
