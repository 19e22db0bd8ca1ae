"""The worker side of one response: admit it, claim it, generate it on the engine loop, end it.

A Celery task thread (tasks.run_response) takes one of the process's response slots,
claims the response and hands it to the process's engine loop, where it runs as a task
beside every other response of the process (generation.py); the thread then waits for its
end without waking. Every way a response can end here, completed, incomplete, cancelled
or failed, goes through the batch writer's ``end``, and so through the one function that
ends a response (services/ended.end_response).
"""

from __future__ import annotations

import asyncio
import logging
import time

from responses_app.engines.host import engine_host
from responses_app.models import Response, ResponseStatus
from responses_app.observability import recorder
from responses_app.stream.builder import EventBuilder
from responses_app.stream.resume import ResumePoint, resume_point
from responses_app.stream.store import LeaseLost
from responses_app.wire.usage import Usage
from responses_app.worker import membership
from responses_app.worker.admission import response_slot
from responses_app.worker.batch_writer import BatchWriter, CancelRequested
from responses_app.worker.cancel_watch import cancel_watch
from responses_app.worker.claim import claim, worker_identity
from responses_app.worker.generation import generate
from responses_app.worker.off_loop import OffLoop
from responses_app.worker.turn import ResponseFailure

log = logging.getLogger(__name__)


def run_response(response_id: str) -> None:
    """Run the response to its end (nothing if it is not claimable)."""
    with response_slot():
        owner = worker_identity()
        leased_at = time.monotonic()  # no later than the claim's lease (a writer's retries count from it)
        response = claim(response_id, owner)
        if response is None:
            log.info("%s: not claimable (cancelled, finished or taken)", response_id)
            return
        prefix_keys = membership.claimed(response.pk)
        fresh = response.last_sequence_number == 0  # only response.created: no output yet
        # A retry after a lost worker goes on from its stream (a continuation, when it had output).
        resumed = None if fresh else resume_point(response)
        builder = EventBuilder(response, next_sequence_number=response.last_sequence_number + 1, resumed=resumed)
        if fresh:
            builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
        off_loop = OffLoop.for_caller()
        if off_loop.shared is not None:
            off_loop.shared.inc_thread_sharing()
        try:
            held_tokens = engine_host().submit(
                run_claimed(response, owner, builder, off_loop, resumed, leased_at)).result()
            if held_tokens is not None:
                membership.remember(prefix_keys, held_tokens)
        finally:
            if off_loop.shared is not None:
                off_loop.shared.dec_thread_sharing()


async def run_claimed(response: Response, owner: str, builder: EventBuilder, off_loop: OffLoop,
                      resumed: ResumePoint | None, leased_at: float) -> int | None:
    """On the engine loop: generate the claimed response and end it. Returns the tokens its
    engine's prefix cache holds for the next turn (None: it was not this worker's to end)."""
    claimed_at = time.monotonic()
    writer = BatchWriter(response, owner, builder, off_loop, asyncio.get_running_loop(), lease_renewed=leased_at)
    usage = Usage()
    with cancel_watch().watching(response.pk):
        try:
            status, details = await generate(response, builder, writer, usage, off_loop, resumed)
            error = None
        except CancelRequested:
            status, details, error = ResponseStatus.CANCELLED, None, None
        except LeaseLost:
            log.warning("%s: lease lost; another party ended or removed the response", response.pk)
            return None
        except ResponseFailure as failure:
            status, details, error = ResponseStatus.FAILED, None, {"code": failure.code, "message": failure.message}
        except Exception:
            log.exception("%s: generation failed", response.pk)
            status, details = ResponseStatus.FAILED, None
            error = {"code": "server_error", "message": "The server had an error while generating this response."}
    try:
        await writer.end(status, error=error, incomplete_details=details, usage=usage.as_dict())
    except LeaseLost:
        log.warning("%s: lease lost before the terminal event", response.pk)
        return None
    recorder.response_finished(response.model, status, usage, time.monotonic() - claimed_at)
    return usage.held_tokens
