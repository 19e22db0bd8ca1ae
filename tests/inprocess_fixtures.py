"""The ``stack`` of the tests that run the API in this process (tests/inprocess.py): the
session's ASGI application (``app``, tests/conftest.py) on an httpx transport, with the
worker's task run inline, so those tests need no live stack. A tests folder's conftest.py
imports it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from responses_app.batches import store as batch_store
from responses_app.dispatch import batch_slots, task_queue
from responses_app.vector_stores import ingest
from tests.inprocess import InlineWorker, InProcessApp
from tests.live.stack import FILES_DIR, STACK_ENV, model_registry


@pytest.fixture
def stack(app: InProcessApp, monkeypatch: pytest.MonkeyPatch, settings, db_access) -> Iterator[InProcessApp]:
    """The app, with the live stack's echo models and settings (its short intervals, small
    caps and allowed hosts), its files storage (the directory this pytest worker's live
    stack uses, which may take up a batch of these tests: tests/live/stack.py), and the
    worker's task run inline."""
    settings.MODEL_REGISTRY = {model: {**entry, "queue": f"model.{model}"}
                               for model, entry in model_registry({}).items()}
    for name, value in STACK_ENV.items():
        current = getattr(settings, name, None)
        if isinstance(current, int | float) and not isinstance(current, bool):
            setattr(settings, name, type(current)(float(value)))
        elif isinstance(current, list):
            setattr(settings, name, [part.strip() for part in value.split(",")])
    settings.STORAGES = {**settings.STORAGES, "files": {**settings.STORAGES["files"],
                                                         "OPTIONS": {"location": str(FILES_DIR)}}}
    worker = InlineWorker()
    monkeypatch.setattr(task_queue, "send", worker.send)
    for module in (batch_slots, batch_store):
        monkeypatch.setattr(module, "send_batch_task", worker.send_batch_task)
    monkeypatch.setattr(ingest, "send_ingest_task", worker.send_ingest_task)
    app.worker = worker
    yield app
    worker.close()
