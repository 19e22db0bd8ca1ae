"""Settings: everything comes from the environment, with defaults for the embedded setup.

The embedded default (``make run``) is SQLite in WAL mode, a local Redis, one Celery
worker and Daphne. Production sets DATABASE_URL to PostgreSQL.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import dj_database_url

# Every variable is read through these, and each has its row (its default and its line of
# docs/settings.md) in project/environment.py.
from project.environment import flag, integer, number, optional_text, text

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = text("DJANGO_SECRET_KEY")
# Keys are hashed with their own secret so that rotating DJANGO_SECRET_KEY (sessions,
# CSRF) does not invalidate every API key.
API_KEY_HMAC_SECRET = text("API_KEY_HMAC_SECRET")
# How long a process keeps an API key it resolved (with its tenant); a change to any key or
# tenant empties every process's cache before its next request (tenancy/key_cache.py). 0: none.
API_KEY_CACHE_S = number("API_KEY_CACHE_S")
# Reasoning returned as encrypted_content (include=["reasoning.encrypted_content"]) is sealed
# with the first of these secrets and opened with any of them: to rotate, put the new
# secret first and keep the old one until the clients' stored histories have moved on.
# By default the API keys' secret, which (unlike DJANGO_SECRET_KEY) is not rotated for sessions.
REASONING_ENCRYPTION_KEYS = [key for key in text("REASONING_ENCRYPTION_KEYS").split(",") if key] or [
    API_KEY_HMAC_SECRET]
DEBUG = flag("DJANGO_DEBUG")
ALLOWED_HOSTS = [h for h in text("DJANGO_ALLOWED_HOSTS").split(",") if h]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "channels",
    "django_celery_beat",
    "responses_app",
    "tools_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # The console's buttons (cancel, re-run, revoke) must not work inside another site's frame.
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "project.middleware.frame_ancestors_none",
]
# What /v1/ runs of MIDDLEWARE (project/asgi.py): the API authenticates each request by its
# key and is CSRF-exempt; sessions, CSRF, auth and messages serve the operator console.
API_MIDDLEWARE = ["django.middleware.security.SecurityMiddleware"]

ROOT_URLCONF = "project.urls"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

ASGI_APPLICATION = "project.asgi.application"
WSGI_APPLICATION = "project.wsgi.application"

RUN_DIR = Path(text("RUN_DIR", computed=str(BASE_DIR / ".run")))
DATABASE_URL = text("DATABASE_URL", computed=f"sqlite:///{RUN_DIR / 'db.sqlite3'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A database that is down or unreachable fails a request within seconds (a 503), never
    # a hang: libpq's default is to wait for the operating system's TCP timeout.
    DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = int(
        number("DATABASE_CONNECT_TIMEOUT_S"))
    # Parameters travel apart from the SQL: with client-side binding, psycopg escapes every
    # value into the query text in Python, the JSON text of every event of every batch.
    DATABASES["default"]["OPTIONS"]["server_side_binding"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the SSE readers read while a worker writes; the busy timeout makes
    # writers queue instead of failing with "database is locked".
    # Writers take turns through a file lock (project/db_backends/sqlite3).
    DATABASES["default"]["ENGINE"] = "project.db_backends.sqlite3"
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file, not Django's default in-memory test database, so that the live servers
    # that the end-to-end tests start can share it (and WAL mode is exercised).
    DATABASES["default"]["TEST"] = {"NAME": f"{DATABASES['default']['NAME']}.test"}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = RUN_DIR / "static"

REDIS_URL = text("REDIS_URL")

# --- Celery -------------------------------------------------------------------------
# The database, not the broker, guarantees delivery. A message only says "look at this
# response": it is acknowledged when a task thread takes it (early ack), the claim is a
# compare-and-set on the row, a claimed response is covered by its lease and the reaper,
# and a queued one that no worker claimed in time is sent again (services/redelivery.py). So a lost
# message delays a response and a duplicate one is a no-op. acks_late would hold each
# message for the whole life of a response: a broker reconnect would then redeliver every
# running response (no-op claims) and leave the workers acknowledging on a connection
# that is gone, and the visibility timeout would have to outlast the longest response.
CELERY_BROKER_URL = text("CELERY_BROKER_URL", computed=REDIS_URL)
# kombu's Redis transport, less a restore that stops a worker after Redis went away
# (responses_app/lib/redis_broker.py).
CELERY_BROKER_TRANSPORT = ("responses_app.lib.redis_broker:Transport"
                           if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else None)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = False
# A worker takes no more messages than it has free task threads (Redis brokers only): a
# message waits in the broker, where any worker can take it, not behind a busy worker.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_DISABLE_PREFETCH = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker waits for its broker as long as it takes (an outage of minutes), never exits.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# A create retries its enqueue briefly; past that the response's row waits for the
# redelivery sweep, so a broker outage never holds a create for long.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2,
                                    "interval_max": 0.2}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Beat keeps its schedule in the database (django-celery-beat): the housekeeping below is
# written there at beat's start, beside the tenants' scheduled responses (schedules.py).
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"
# A scheduled response's beat entry is picked up within this many seconds of a change.
CELERY_BEAT_MAX_LOOP_INTERVAL = int(number("BEAT_MAX_LOOP_INTERVAL_S"))


# A sweep waits in the broker for a free task thread, behind the responses queued there.
# One that waited this long (or its period, if longer) is dropped: the sweeps behind it do
# the same work. Not sooner: while every thread stays busy for longer than a period, sweeps
# that expired after one period were all dropped, and deferred responses were never promoted.
SWEEP_EXPIRY_MIN_S = 60


def _every(name: str, interval_s: float, *, expires: bool = True) -> dict:
    # Whole seconds: the database scheduler stores intervals as integers (0 would fire nonstop).
    interval_s = max(1, round(interval_s))
    entry: dict = {"task": f"responses_app.tasks.{name}", "schedule": interval_s}
    if expires:
        entry["options"] = {"expire_seconds": max(interval_s, SWEEP_EXPIRY_MIN_S)}
    return entry


CELERY_BEAT_SCHEDULE = {
    "reap-expired-leases": _every("reap_expired_leases", number("REAPER_INTERVAL_S")),
    "redeliver-unclaimed-responses": _every("redeliver_unclaimed", number("REDELIVERY_INTERVAL_S")),
    "pack-event-logs": _every("pack_event_logs", number("PACK_INTERVAL_S")),
    "purge-unstored-responses": _every("purge_unstored_responses", number("PURGE_INTERVAL_S"),
                                       expires=False),
    "purge-expired-responses": _every("purge_expired_responses", number("RETENTION_INTERVAL_S")),
    "dispatch-deferred-responses": _every("dispatch_deferred", number("DEFERRED_DISPATCH_INTERVAL_S")),
    "send-due-webhooks": _every("send_due_webhooks", number("WEBHOOK_SWEEP_INTERVAL_S")),
    "cancel-detached-responses": _every("cancel_detached", number("DETACHED_SWEEP_INTERVAL_S")),
    "purge-expired-files": _every("purge_expired_files", number("FILE_PURGE_INTERVAL_S")),
    "sweep-stalled-ingestions": _every("sweep_stalled_ingestions", number("VECTOR_STORE_SWEEP_INTERVAL_S")),
    # Batches whose next step was missed (a lost message, a restart): refill, expire, finalize.
    "advance-batches": _every("advance_batches", number("BATCH_TICK_INTERVAL_S")),
    "expire-idle-containers": {
        "task": "tools_app.tasks.expire_idle_containers",
        "schedule": max(1, round(number("CONTAINER_EXPIRY_INTERVAL_S"))),
    },
}

# --- Responses runtime ----------------------------------------------------------------
# A worker renews its lease every LEASE_RENEW_S; the reaper recovers rows whose lease is
# older than LEASE_TTL_S (a worker that died). Keep TTL several renew periods long.
LEASE_TTL_S = number("RESPONSE_LEASE_TTL_S")
LEASE_RENEW_S = number("RESPONSE_LEASE_RENEW_S")
# A queued response that no worker claimed within RESPONSE_RESEND_AFTER_S of its enqueue
# is sent again (its message was lost: a broker restart, a purge); one still unclaimed
# after RESPONSE_UNCLAIMED_FAIL_AFTER_S while no live worker consumes its model's queue
# is failed (service_unavailable).
RESPONSE_RESEND_AFTER_S = number("RESPONSE_RESEND_AFTER_S")
RESPONSE_UNCLAIMED_FAIL_AFTER_S = number("RESPONSE_UNCLAIMED_FAIL_AFTER_S")
# A response that crashed before emitting any output item is retried this many times.
RESPONSE_MAX_ATTEMPTS = integer("RESPONSE_MAX_ATTEMPTS")
# A response whose worker was lost after it had written output is continued by another
# worker this many times at most; then it fails (one poison request cannot take down
# every node in turn).
RESPONSE_MAX_RECOVERIES = integer("RESPONSE_MAX_RECOVERIES")
# Events are committed at most this long after they are produced.
EVENT_FLUSH_INTERVAL_S = number("EVENT_FLUSH_INTERVAL_S")
# An item's text deltas that are committed together are one delta event (a reader gets a
# commit's events at once, so more of them would only cost CPU and bytes); off: one delta
# event per token, as OpenAI streams them (stream/builder.py).
MERGE_STREAM_DELTAS = flag("MERGE_STREAM_DELTAS")
SSE_KEEPALIVE_S = number("SSE_KEEPALIVE_S")
# The Responses WebSocket: a foreground response whose socket went away is cancelled when
# no socket of its session resumes it within WS_RESUME_GRACE_S (the SDK's reconnect, five
# tries with backoff up to 8 s, fits well inside 30 s); steering input queued per response
# is capped; the server's delivery cursor of a session (for a resume without one of the
# client's own) is kept in Redis this long.
WS_RESUME_GRACE_S = number("WS_RESUME_GRACE_S")
WS_REFUSAL_WAIT_S = number("WS_REFUSAL_WAIT_S")
WS_MAX_PENDING_STEERS = int(number("WS_MAX_PENDING_STEERS"))
WS_CURSOR_TTL_S = int(number("WS_CURSOR_TTL_S"))
# POST /v1/responses/compact: the most tokens the model may spend on its summary turn.
COMPACTION_MAX_OUTPUT_TOKENS = int(number("COMPACTION_MAX_OUTPUT_TOKENS"))
# Database threads of one web process (responses_app/lib/asyncdb.py): for requests' own work
# (creates, retrieves) and, apart, for the reads of the streams that follow responses.
WEB_REQUEST_DB_THREADS = int(number("WEB_REQUEST_DB_THREADS"))
WEB_STREAM_DB_THREADS = int(number("WEB_STREAM_DB_THREADS"))
# While a create is under way in a web process, its stream reads wait at most this long
# for it (stream/creates_first.py); 0 turns the wait off.
STREAM_READS_YIELD_S = number("STREAM_READS_YIELD_S")
# When a response ends, its event rows are packed into one compressed block (stream/event_log.py),
# by a task on PACK_QUEUE (the maintenance queue, which GPU nodes do not consume), sent
# once per PACK_DELAY_S with every response that ended in the meantime in the process.
EVENT_LOG_PACKING = flag("EVENT_LOG_PACKING")
PACK_QUEUE = text("PACK_QUEUE")
PACK_DELAY_S = number("PACK_DELAY_S")
# Decompressed packed logs each web process keeps for replays.
PACKED_LOG_CACHE_BYTES = int(number("PACKED_LOG_CACHE_MB") * 2**20)
# Rows of store=false responses are deleted this long after the response ends.
UNSTORED_RETENTION_S = number("UNSTORED_RETENTION_S")
ECHO_TOKEN_DELAY_MS = number("ECHO_TOKEN_DELAY_MS")
ECHO_PREFIX_CACHE_TOKENS = int(number("ECHO_PREFIX_CACHE_TOKENS"))
ECHO_PREFILL_TOKENS_PER_S = number("ECHO_PREFILL_TOKENS_PER_S")

# --- Background jobs ---------------------------------------------------------------------
# Stored responses are deleted this many days after they end (0: kept forever); a tenant
# may override it (Tenant.response_retention_days). The purge deletes at most
# RETENTION_PURGE_BATCH responses per transaction.
RESPONSE_RETENTION_DAYS = number("RESPONSE_RETENTION_DAYS")
RETENTION_PURGE_BATCH = int(number("RETENTION_PURGE_BATCH"))
# background_options.completion_window: how long each window is, and how long before its
# deadline a deferred response still waiting is promoted to the interactive queue.
COMPLETION_WINDOWS_S = {"2h": number("COMPLETION_WINDOW_2H_S"),
                        "8h": number("COMPLETION_WINDOW_8H_S")}
DEFERRED_PROMOTE_BEFORE_S = number("DEFERRED_PROMOTE_BEFORE_S")
# Webhook deliveries: the queue of their tasks, each attempt's timeout, the first retry
# delay (doubling, with jitter, up to WEBHOOK_RETRY_MAX_S), and how long a delivery is
# retried before it is given up.
WEBHOOK_QUEUE = text("WEBHOOK_QUEUE")
WEBHOOK_TIMEOUT_S = number("WEBHOOK_TIMEOUT_S")
WEBHOOK_RETRY_BASE_S = number("WEBHOOK_RETRY_BASE_S")
WEBHOOK_RETRY_MAX_S = number("WEBHOOK_RETRY_MAX_S")
WEBHOOK_RETRY_WINDOW_S = number("WEBHOOK_RETRY_WINDOW_S")
# Attempts of one endpoint queued or running at once: a backlog of one never fills the queue.
WEBHOOK_MAX_QUEUED_PER_ENDPOINT = int(number("WEBHOOK_MAX_QUEUED_PER_ENDPOINT"))

HARMONY_VOCAB_DIR = Path(text("HARMONY_VOCAB_DIR", computed=str(BASE_DIR / ".cache" / "harmony")))


def _load_model_registry() -> dict[str, dict]:
    """The models this deployment serves: id -> {"engine": ..., ...}.

    From MODEL_REGISTRY (JSON) or MODEL_REGISTRY_FILE (a JSON file); by default only the
    deterministic ``echo`` engine, which needs no weights.
    """
    raw = optional_text("MODEL_REGISTRY")
    path = optional_text("MODEL_REGISTRY_FILE")
    if not raw and path:
        raw = Path(path).read_text()
    registry = json.loads(raw) if raw else {"echo": {"engine": "echo", "max_model_len": 131072}}
    for model_id, entry in registry.items():
        entry.setdefault("queue", f"model.{model_id}")
    return registry


MODEL_REGISTRY = _load_model_registry()

# --- A worker process's responses ----------------------------------------------------------
# Every response a worker process runs is a task on its engine loop; it takes one of the
# process's response slots first, and a process whose slots are all taken claims nothing
# more, so that another node gets the message. By default the slots are the engines' batches:
# vLLM's max_num_seqs (256 unless a model's engine_args say otherwise) for each model.
ENGINE_BATCH_DEFAULT = 256
WORKER_RESPONSE_SLOTS = int(number("WORKER_RESPONSE_SLOTS", computed=sum(
    entry.get("engine_args", {}).get("max_num_seqs", ENGINE_BATCH_DEFAULT) for entry in MODEL_REGISTRY.values())))
NODE_ID = text("NODE_ID", computed=socket.gethostname())
# Dispatch across the nodes of a model (responses_app/dispatch/placement.py).
DISPATCH = text("DISPATCH")
if DISPATCH not in ("prefix", "least_loaded", "model_queue"):
    raise ValueError(f"DISPATCH={DISPATCH!r}: one of prefix, least_loaded, model_queue")
FLEET_PREFILL_TOKENS_PER_S = number("FLEET_PREFILL_TOKENS_PER_S")
FLEET_MAX_WAIT_S = number("FLEET_MAX_WAIT_S")
FLEET_HEARTBEAT_S = number("FLEET_HEARTBEAT_S")
FLEET_NODE_TTL_S = number("FLEET_NODE_TTL_S")
FLEET_AFFINITY_TTL_S = number("FLEET_AFFINITY_TTL_S")
# On a GPU node run by its supervisor (responses_app/engines/node.py): the node's response
# slots (shared by its worker processes), and the engine core this process is a client of.
NODE_ADMISSION_FILE = text("NODE_ADMISSION_FILE")
NODE_ENGINE_CORE_FILE = text("NODE_ENGINE_CORE_FILE")
NODE_ENGINE_SLOT = integer("NODE_ENGINE_SLOT")
# The Celery task of a response waits, without waking, while its response runs on the
# loop: the threads pool has a thread for each slot, and a few more for the rest of the
# worker's tasks (the reaper, batches, schedules).
CELERY_WORKER_CONCURRENCY = int(number("WORKER_CONCURRENCY", computed=WORKER_RESPONSE_SLOTS + 8))
# Off the loop (responses_app/worker/off_loop.py): threads for the responses' ORM work
# (their history and prompt, their end) and for their server-side tool calls.
WORKER_DB_THREADS = int(number("WORKER_DB_THREADS"))
WORKER_TOOL_THREADS = int(number("WORKER_TOOL_THREADS"))

# Where clients reach this server; file outputs of the code interpreter link to it.
PUBLIC_BASE_URL = text("PUBLIC_BASE_URL").rstrip("/")
# A response ends as failed after this many engine turns (a model that never stops calling tools).
MAX_TOOL_TURNS = integer("MAX_TOOL_TURNS")

# --- Tools -------------------------------------------------------------------------------
# Each server-side tool call (python, MCP, browser) gets at most this long.
TOOL_CALL_TIMEOUT_S = number("TOOL_CALL_TIMEOUT_S")
# Code interpreter containers: one dir per container under CONTAINERS_DIR; a container
# idle for longer than CONTAINER_IDLE_TIMEOUT_S expires (files and session are deleted).
CONTAINERS_DIR = Path(text("CONTAINERS_DIR", computed=str(RUN_DIR / "containers")))
CONTAINER_IDLE_TIMEOUT_S = int(number("CONTAINER_IDLE_TIMEOUT_S"))
# A call's lease on its container (one call at a time on every node) runs out this long
# after its node stopped renewing it (a lost node): the next call then takes it over.
CONTAINER_LOCK_TTL_S = number("CONTAINER_LOCK_TTL_S")
# The largest file containers.files.create accepts (bytes).
CONTAINER_FILE_MAX_BYTES = int(number("CONTAINER_FILE_MAX_BYTES"))
SANDBOX_MEMORY_MB = int(number("SANDBOX_MEMORY_MB"))
SANDBOX_CPU_S = int(number("SANDBOX_CPU_S"))
SANDBOX_MAX_PROCESSES = int(number("SANDBOX_MAX_PROCESSES"))
SANDBOX_MAX_OUTPUT_BYTES = int(number("SANDBOX_MAX_OUTPUT_BYTES"))
SANDBOX_MAX_DISK_MB = int(number("SANDBOX_MAX_DISK_MB"))
# MCP servers and other outbound tool URLs: loopback, private, link-local and metadata
# addresses are refused unless listed here (host or host:port, comma-separated).
TOOLS_ALLOWED_PRIVATE_HOSTS = [h.strip() for h in text("TOOLS_ALLOWED_PRIVATE_HOSTS").split(",") if h.strip()]
# web_search's built-in backend: a SQLite FTS5 index of documents loaded with
# `manage.py load_search_documents`. WEB_SEARCH_MCP_SERVER names a registered MCP
# server (label) to search with instead.
WEB_SEARCH_INDEX_PATH = Path(text("WEB_SEARCH_INDEX_PATH", computed=str(RUN_DIR / "search-index.sqlite3")))
WEB_SEARCH_MCP_SERVER = text("WEB_SEARCH_MCP_SERVER")

# --- Files (client.files) ------------------------------------------------------------------
# The bytes of uploaded files, batch outputs and containers' files go to the "files"
# storage: a directory of the local file system (FILES_DIR), or, with FILES_S3_BUCKET, a
# bucket of an S3-compatible store that every node shares (django-storages; credentials
# from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the machine's role).
FILES_DIR = Path(text("FILES_DIR", computed=str(RUN_DIR / "files")))
FILES_S3_BUCKET = text("FILES_S3_BUCKET")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "files": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(FILES_DIR)}},
}
if FILES_S3_BUCKET:
    STORAGES["files"] = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
        "bucket_name": FILES_S3_BUCKET,
        "endpoint_url": optional_text("FILES_S3_ENDPOINT_URL") or None,  # a store other than AWS's
        "region_name": optional_text("FILES_S3_REGION") or None,
        "addressing_style": optional_text("FILES_S3_ADDRESSING_STYLE") or None,  # "path" for most local stores
        "location": text("FILES_S3_PREFIX"),
        # Names are ids, never reused: a save never needs to look for a free name first.
        "file_overwrite": True,
        "default_acl": None,
    }}
# The largest upload (bytes), and for purpose "batch" the largest file and most lines (OpenAI's).
FILE_MAX_BYTES = int(number("FILE_MAX_BYTES"))
BATCH_FILE_MAX_BYTES = int(number("BATCH_FILE_MAX_BYTES"))
BATCH_FILE_MAX_LINES = int(number("BATCH_FILE_MAX_LINES"))
# A batch input file expires this long after its upload unless expires_after says otherwise.
BATCH_FILE_DEFAULT_EXPIRY_S = int(number("BATCH_FILE_DEFAULT_EXPIRY_S"))
# --- Vector stores (client.vector_stores) and file_search ---------------------------------------
VECTOR_STORE_QUEUE = text("VECTOR_STORE_QUEUE")
VECTOR_STORE_MAX_STORES = integer("VECTOR_STORE_MAX_STORES")
VECTOR_STORE_MAX_FILES = integer("VECTOR_STORE_MAX_FILES")
VECTOR_STORE_MAX_BYTES = integer("VECTOR_STORE_MAX_BYTES")
VECTOR_STORE_FILE_MAX_BYTES = integer("VECTOR_STORE_FILE_MAX_BYTES")
VECTOR_STORE_INGEST_STALL_S = number("VECTOR_STORE_INGEST_STALL_S")
VECTOR_STORE_INGEST_MAX_ATTEMPTS = integer("VECTOR_STORE_INGEST_MAX_ATTEMPTS")
# Embedding models: id -> {"engine": "wordllama"} (responses_app/embeddings/registry.py).
EMBEDDING_MODELS: dict[str, dict] = json.loads(text("EMBEDDING_MODELS"))
# The model that embeds new stores' chunks ("" for lexical search only).
VECTOR_STORE_EMBEDDING_MODEL = text("VECTOR_STORE_EMBEDDING_MODEL")
if VECTOR_STORE_EMBEDDING_MODEL and VECTOR_STORE_EMBEDDING_MODEL not in EMBEDDING_MODELS:
    raise ValueError(f"VECTOR_STORE_EMBEDDING_MODEL {VECTOR_STORE_EMBEDDING_MODEL!r} is not in EMBEDDING_MODELS")
VECTOR_STORE_VECTOR_CACHE_BYTES = int(number("VECTOR_STORE_VECTOR_CACHE_MB") * 2**20)
# --- Batches (client.batches) ----------------------------------------------------------------
# How long a batch may take ("24h", the one completion_window): at its end the requests not
# yet ended are reported expired. Shorter only for tests.
BATCH_COMPLETION_WINDOW_S = number("BATCH_COMPLETION_WINDOW_S")
# The most batch responses queued or running at once per model, over all its batches (each
# of n batches gets its 1/n share). A running batch response holds a worker thread and its
# share of the worker's CPU: on the echo engine (CPU-bound) 4 passes as many requests/s as 16
# with half the slowdown of interactive first events (bench/batch.py, docs/benchmarks.md); on a GPU node,
# where a batch response waits on the GPU, raise it.
BATCH_MAX_IN_FLIGHT = int(number("BATCH_MAX_IN_FLIGHT"))
# A tenant's batch requests not yet ended, over all its batches (Tenant.max_queued_batch_requests
# overrides it); a batch that would pass it fails validation.
BATCH_MAX_QUEUED_REQUESTS = int(number("BATCH_MAX_QUEUED_REQUESTS"))
# Each request's end advances its batch at once; beat's tick (BATCH_TICK_INTERVAL_S) takes up
# a batch that has not advanced for this long (its messages lost, or an expiry with nothing
# running).
BATCH_STALL_S = number("BATCH_STALL_S")
# How many responses a batch request may be given: one whose response failed with a
# server_error (its worker lost mid-answer, an engine fault) is run again, up to this many
# times in all, before its failure goes to the error file.
BATCH_REQUEST_MAX_ATTEMPTS = int(number("BATCH_REQUEST_MAX_ATTEMPTS"))
# An input_file part is read whole to take its text: the largest file (bytes) it may name.
INPUT_FILE_MAX_BYTES = int(number("INPUT_FILE_MAX_BYTES"))

# --- Limits on what a client sends (docs/operating.md, "Limits and abuse") ------------------------------
# A JSON body (every endpoint but file uploads): at most this many bytes, nested at most
# this deep; over either is a 413 or a 400 before anything is stored.
JSON_BODY_MAX_BYTES = int(number("JSON_BODY_MAX_BYTES"))
JSON_BODY_MAX_DEPTH = int(number("JSON_BODY_MAX_DEPTH"))
# Django's own cap on request.body follows the JSON cap (it would otherwise raise at 2.5 MB).
DATA_UPLOAD_MAX_MEMORY_SIZE = JSON_BODY_MAX_BYTES
# A multipart upload: at most this many parts (a file upload has one file and no fields).
DATA_UPLOAD_MAX_NUMBER_FILES = int(number("UPLOAD_MAX_FILES"))
DATA_UPLOAD_MAX_NUMBER_FIELDS = int(number("UPLOAD_MAX_FIELDS"))

# Per-tenant caps for every tenant (0: none): foreground responses queued or running at
# once (429 past it), schedules and webhook endpoints (400 on the create past them).
TENANT_MAX_CONCURRENT_FOREGROUND = int(number("TENANT_MAX_CONCURRENT_FOREGROUND"))
TENANT_MAX_SCHEDULES = int(number("TENANT_MAX_SCHEDULES"))
TENANT_MAX_WEBHOOK_ENDPOINTS = int(number("TENANT_MAX_WEBHOOK_ENDPOINTS"))
# Prompt templates: versions of all a tenant's prompts together (each version is kept).
TENANT_MAX_PROMPT_VERSIONS = int(number("TENANT_MAX_PROMPT_VERSIONS"))

# Every /v1 view is a responses_app.http.base.ApiView, which sets its authentication,
# permission and content negotiation; these defaults cover what DRF builds itself.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["responses_app.http.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["responses_app.http.permissions.KeyScopePermission"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "responses_app.http.exceptions.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
# GET /v1/openapi.json (responses_app/api/openapi.py).
SPECTACULAR_SETTINGS = {
    "TITLE": "gpt-oss-responses",
    "DESCRIPTION": "The OpenAI Responses API for gpt-oss models.",
    "VERSION": "0.1.0",
    "OAS_VERSION": "3.1.0",
    "SERVERS": [{"url": "/"}],
    "POSTPROCESSING_HOOKS": ["responses_app.api.openapi.add_sdk_schemas_and_errors"],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": text("LOG_LEVEL")},
    "loggers": {"daphne": {"level": "WARNING"}, "django.channels.server": {"level": "WARNING"}},
}
