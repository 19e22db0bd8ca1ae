"""Start a worker's engines before it takes tasks, so that readiness means "can generate",
and stop them when it stops.

Celery sends ``worker_init`` before the consumer starts; loading the models of the queues
this worker consumes there delays the worker's readiness until they are up. This needs
the threads pool (the engines live in the worker's main process), as the Procfile runs.
"""

from __future__ import annotations

import logging

from celery.signals import worker_init, worker_shutdown
from django.conf import settings

from responses_app.engines.host import engine_host

log = logging.getLogger(__name__)


def served_models(queue_names: set[str]) -> list[str]:
    return [model for model, entry in settings.MODEL_REGISTRY.items() if entry["queue"] in queue_names]


@worker_init.connect
def start_engines(sender, **kwargs) -> None:
    queues = set(sender.app.amqp.queues.consume_from or sender.app.amqp.queues)
    models = served_models(queues)
    log.info("this worker serves %s (queues %s)", ", ".join(models) or "no model", ", ".join(sorted(queues)))
    host = engine_host()
    for model in models:
        host.engine(model)


@worker_shutdown.connect
def stop_engines(sender, **kwargs) -> None:
    """Stop the engines with the worker: vLLM's engine-core processes would outlive it."""
    engine_host().shutdown()
