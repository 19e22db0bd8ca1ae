"""The worker side of one response: claim it, generate, end it.

Runs in a Celery task thread (tasks.run_response). Every way a response can end here,
completed, incomplete, cancelled or failed, goes through the batch writer's ``end``, and
so through the one function that ends a response (services/ended.end_response).
"""

from __future__ import annotations

import logging
import time

from responses_app.models import ResponseStatus
from responses_app.observability import recorder
from responses_app.selectors import output_items
from responses_app.stream.builder import EventBuilder
from responses_app.stream.store import LeaseLost
from responses_app.wire.usage import Usage
from responses_app.worker.batch_writer import BatchWriter, CancelRequested
from responses_app.worker.cancel_watch import cancel_watch
from responses_app.worker.claim import claim, worker_identity
from responses_app.worker.generation import ResponseFailure, generate

log = logging.getLogger(__name__)


def run_response(response_id: str) -> None:
    owner = worker_identity()
    response = claim(response_id, owner)
    if response is None:
        log.info("%s: not claimable (cancelled, finished or taken)", response_id)
        return
    claimed_at = time.monotonic()
    builder = EventBuilder(response, next_sequence_number=response.last_sequence_number + 1,
                           output=output_items(response))
    if response.last_sequence_number == 0:
        # Only response.created so far; a retry after a lost worker has announced it already.
        builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    writer = BatchWriter(response, owner, builder)
    usage = Usage()
    with cancel_watch().watching(response_id):
        try:
            status, details = generate(response, builder, writer, usage)
            error = None
        except CancelRequested:
            status, details, error = ResponseStatus.CANCELLED, None, None
        except LeaseLost:
            log.warning("%s: lease lost; another party ended or removed the response", response_id)
            return
        except ResponseFailure as failure:
            status, details, error = ResponseStatus.FAILED, None, {"code": failure.code, "message": failure.message}
        except Exception:
            log.exception("%s: generation failed", response_id)
            status, details = ResponseStatus.FAILED, None
            error = {"code": "server_error", "message": "The server had an error while generating this response."}
    try:
        writer.end(status, error=error, incomplete_details=details, usage=usage.as_dict())
    except LeaseLost:
        log.warning("%s: lease lost before the terminal event", response_id)
        return
    recorder.response_finished(response.model, status, usage.output_tokens, time.monotonic() - claimed_at)
