"""Celery tasks: thin wrappers around the worker and the services."""

from __future__ import annotations

from celery import shared_task

from responses_app.batches import runner as batch_runner
from responses_app.dispatch import deferred
from responses_app.dispatch.batch_slots import ADVANCE_BATCH_TASK, VALIDATE_BATCH_TASK
from responses_app.dispatch.task_queue import RUN_RESPONSE_TASK
from responses_app.engines import control, startup  # noqa: F401  (an inspect command; engine start at worker init)
from responses_app.files import store as file_store
from responses_app.schedules import runs as schedule_runs
from responses_app.schedules.beat_entries import RUN_SCHEDULED_TASK
from responses_app.services import recovery, redelivery
from responses_app.stream import event_log
from responses_app.stream.pack_requests import PACK_TASK
from responses_app.tenancy import retention
from responses_app.vector_stores import ingest
from responses_app.webhooks import delivery as webhook_delivery
from responses_app.worker import membership  # noqa: F401  (a node's queue, heartbeat and spill pass)
from responses_app.worker import run as worker


@shared_task(name=RUN_RESPONSE_TASK, acks_late=False)
def run_response(response_id: str) -> None:
    worker.run_response(response_id)


@shared_task(name="responses_app.tasks.reap_expired_leases")
def reap_expired_leases() -> dict[str, int]:
    return recovery.reap_expired_leases()


@shared_task(name="responses_app.tasks.redeliver_unclaimed")
def redeliver_unclaimed() -> dict[str, int]:
    return redelivery.redeliver_unclaimed()


@shared_task(name="responses_app.tasks.cancel_detached")
def cancel_detached() -> int:
    return recovery.cancel_detached()


@shared_task(name="responses_app.tasks.purge_unstored_responses")
def purge_unstored_responses() -> int:
    return recovery.purge_unstored_responses()


@shared_task(name="responses_app.tasks.pack_event_logs")
def pack_event_logs() -> int:
    return event_log.pack_unpacked()


@shared_task(name=PACK_TASK)
def pack_event_logs_of(response_ids: list[str]) -> int:
    return event_log.pack_many(response_ids)


@shared_task(name="responses_app.tasks.purge_expired_responses")
def purge_expired_responses() -> int:
    return retention.purge_expired()


@shared_task(name="responses_app.tasks.purge_expired_files")
def purge_expired_files() -> int:
    return file_store.purge_expired()


@shared_task(name="responses_app.tasks.ingest_vector_store_file")
def ingest_vector_store_file(store_file_id: int) -> None:
    ingest.ingest(store_file_id)


@shared_task(name="responses_app.tasks.sweep_stalled_ingestions")
def sweep_stalled_ingestions() -> int:
    return ingest.sweep_stalled()


@shared_task(name="responses_app.tasks.dispatch_deferred")
def dispatch_deferred() -> dict[str, int]:
    return deferred.dispatch_deferred()


@shared_task(name=RUN_SCHEDULED_TASK)
def run_scheduled_response(scheduled_response_id: str) -> None:
    schedule_runs.run_scheduled(scheduled_response_id)


@shared_task(name=webhook_delivery.DELIVER_TASK)
def deliver_webhook(delivery_id: int) -> None:
    webhook_delivery.deliver(delivery_id)


@shared_task(name="responses_app.tasks.send_due_webhooks")
def send_due_webhooks() -> int:
    return webhook_delivery.queue_due()


@shared_task(name=VALIDATE_BATCH_TASK)
def validate_batch(batch_id: str) -> None:
    batch_runner.validate_batch(batch_id)


@shared_task(name=ADVANCE_BATCH_TASK)
def advance_batch(batch_id: str) -> None:
    batch_runner.advance_batch(batch_id)


@shared_task(name="responses_app.tasks.advance_batches")
def advance_batches() -> int:
    return batch_runner.advance_batches()
