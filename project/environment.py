"""Every environment variable of the server, in one table, and the readers that use it.

project/settings.py reads the environment only through the readers below, and a reader
refuses a name that has no row (KeyError), so a variable cannot be read without being
documented. scripts/settings_reference.py writes the site's Settings page (docs/settings.md)
from the same rows, in their order, so the page cannot drift from the code. Adding a
setting is one row here and one reader call in settings.py.

No Django here: the page's script imports this module without setting Django up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

# The page's two tables: the settings of every process, and the variables that only
# `make run` and the Procfile's process lines use.
Section = Literal["configuration", "processes"]
# Who reads the variable: project/settings.py (through these readers), or the Makefile and
# the Procfile's command lines (their ${NAME:-default}), which Python never sees.
Reader = Literal["settings", "processes"]


@dataclass(frozen=True)
class Variable:
    name: str
    # What the readers fall back to when the variable is unset, as the environment would
    # hold it; None where there is none or settings.py computes it (from RUN_DIR, ...).
    default: str | None
    # The Meaning cell of the page, in Markdown.
    meaning: str
    # The Default cell where `default` would not say it (computed, or shown another way).
    documented_default: str | None = None
    section: Section = "configuration"
    read_by: Reader = "settings"


VARIABLES: tuple[Variable, ...] = (
    Variable("DATABASE_URL", None,
             "Database ([dj-database-url](https://github.com/jazzband/dj-database-url) syntax). SQLite runs in WAL "
             "mode; production uses `postgres://user:pass@host:5432/name`.",
             documented_default="`sqlite:///.run/db.sqlite3` (under `RUN_DIR`)"),
    Variable("REDIS_URL", "redis://127.0.0.1:6379/0",
             "Redis for stream doorbells (pub/sub) and, by default, the Celery broker."),
    Variable("CELERY_BROKER_URL", None, "Celery broker, if it differs from `REDIS_URL`.",
             documented_default="`REDIS_URL`"),
    Variable("RUN_DIR", None, "Runtime files: SQLite database, demo key, test services.",
             documented_default="`.run`"),
    Variable("DJANGO_SECRET_KEY", "dev-insecure-change-me",
             "Django's secret (sessions, CSRF). Set it in production."),
    Variable("API_KEY_HMAC_SECRET", "dev-api-key-secret-change-me",
             "HMAC key for stored API keys; changing it invalidates every key. Set it in production."),
    Variable("API_KEY_CACHE_S", "60",
             "How long a web process keeps an API key it resolved, with its tenant; any change to a key or tenant "
             "empties every process's cache at once ([Tenants, keys and "
             "limits](operating.md#tenants-keys-and-limits)). `0` turns the cache off."),
    Variable("REASONING_ENCRYPTION_KEYS", "",
             "Comma-separated secrets that seal `reasoning.encrypted_content` (AES-256-GCM, bound to the tenant). The "
             "first seals, every one opens: to rotate, put the new secret first and drop the old one once clients' "
             "histories have moved on. Every web and worker process needs the same list.",
             documented_default="`API_KEY_HMAC_SECRET`"),
    Variable("DJANGO_DEBUG", "false", "Django debug mode."),
    Variable("DJANGO_ALLOWED_HOSTS", "*", "Comma-separated host names."),
    Variable("MODEL_REGISTRY", None,
             "JSON: model id → engine settings; each model gets the Celery queue `model.<id>` unless it names one.",
             documented_default='`{"echo": {"engine": "echo", "max_model_len": 131072}}`'),
    Variable("MODEL_REGISTRY_FILE", None, "A JSON file with the registry, used when `MODEL_REGISTRY` is unset."),
    Variable("EMBEDDING_MODELS", '{"wordllama-l2-supercat": {"engine": "wordllama"}}',
             "JSON: embedding model id → engine settings, served by `POST /v1/embeddings` ([Embeddings]"
             "(file-search.md#embeddings)). The one engine, `wordllama`, is a static model whose weights come with "
             "the `wordllama` package (256 dimensions, CPU only)."),
    Variable("HARMONY_VOCAB_DIR", None,
             "Where `o200k_base.tiktoken` is written (`manage.py write_harmony_vocab`); harmony never downloads it.",
             documented_default="`.cache/harmony`"),
    Variable("RESPONSE_LEASE_TTL_S", "15", "A worker's lease on a response expires after this long without renewal."),
    Variable("RESPONSE_LEASE_RENEW_S", "3", "How often a worker renews its lease."),
    Variable("RESPONSE_MAX_ATTEMPTS", "3", "Retries of a response whose worker died before any output item."),
    Variable("RESPONSE_MAX_RECOVERIES", "2",
             "Continuations of a response whose worker died after it wrote output; past them it fails ([Faults and "
             "recovery](faults.md#a-lost-workers-responses-are-continued))."),
    Variable("REAPER_INTERVAL_S", "10", "Period of the beat task that recovers expired leases."),
    Variable("REDELIVERY_INTERVAL_S", "5",
             "Period of the beat task that sends lost messages again ([Faults and recovery](faults.md))."),
    Variable("RESPONSE_RESEND_AFTER_S", "15",
             "A queued response whose message is no longer in its queue is sent again once it has waited this long "
             "since its last send."),
    Variable("RESPONSE_UNCLAIMED_FAIL_AFTER_S", "300",
             "A queued response older than this fails (`server_error`, naming the model and queue) while no live "
             "worker consumes its model's queue."),
    Variable("DATABASE_CONNECT_TIMEOUT_S", "5",
             "PostgreSQL connect timeout: a database that is down answers a request with a 503 within this, never a "
             "hang."),
    Variable("PURGE_INTERVAL_S", "30", "Period of the beat task that deletes finished `store=false` responses."),
    Variable("UNSTORED_RETENTION_S", "60",
             "How long a finished `store=false` response is kept (longer while a socket of its WebSocket session is "
             "open)."),
    Variable("EVENT_FLUSH_INTERVAL_S", "0.05",
             "Longest delay before produced events are committed (all of a worker process's responses in one group)."),
    Variable("WORKER_RESPONSE_SLOTS", None,
             "Responses one worker process runs at once on its engine loop: the sum of each model's "
             "`engine_args.max_num_seqs` (256 unless set); a full process claims no more.",
             documented_default="the engines' batches"),
    Variable("NODE_ID", None,
             "The name of this worker node (a GPU, or the processes sharing its engine): its queue of each model "
             "(`<model queue>@<NODE_ID>`, where dispatch sends the responses whose prefix it holds), and what "
             "`/metrics` counts its prompt tokens and dispatch decisions by. Unique per node.",
             documented_default="the machine's host name"),
    Variable("DISPATCH", "prefix",
             "Where a response is sent: `prefix`, the node whose expected first token is soonest (the prefix it "
             "holds against its load), `least_loaded`, the node with the fewest responses, or `model_queue`, the "
             "model's queue that every node takes from ([how dispatch decides](gpu-node.md#dispatch)). With no "
             "live node, the model's queue."),
    Variable("FLEET_PREFILL_TOKENS_PER_S", "30000",
             "What dispatch expects a node to prefill per second (30,000 stands for gpt-oss-20b on an H100): the "
             "seconds a prefix saves, and how long a response waits for its busy node at most."),
    Variable("FLEET_MAX_WAIT_S", "10", "A response waits for its preferred node at most this long, whatever "
             "its prefix would save; then any node of its model takes it."),
    Variable("FLEET_HEARTBEAT_S", "1", "How often each worker process reports its load (and spills the "
             "responses whose wait for their node is over)."),
    Variable("FLEET_NODE_TTL_S", "5", "A node whose processes reported nothing for this long has left: "
             "dispatch forgets its prefixes."),
    Variable("FLEET_AFFINITY_TTL_S", "3600", "How long dispatch remembers where a prefix was computed (a "
             "chain's response, a conversation, a prompt_cache_key, a leading input)."),
    Variable("NODE_ADMISSION_FILE", "",
             "Set by the node supervisor (`manage.py run_gpu_node`) for its worker processes: the file whose locked "
             "bytes are the node's response slots, so that admission counts the engine's batch across the processes "
             "that share it ([GPU node](gpu-node.md)).",
             documented_default="none: each process its own slots"),
    Variable("NODE_ENGINE_CORE_FILE", "",
             "Set by the node supervisor for its worker processes: the addresses of the node's shared vLLM engine "
             "core, which the process's engine for that model attaches to instead of starting its own.",
             documented_default="none: each process its own engine"),
    Variable("NODE_ENGINE_SLOT", "0",
             "Set by the node supervisor: this worker process's client slot on the shared engine core."),
    Variable("WORKER_DB_THREADS", "4",
             "Threads of a worker process for its responses' ORM work (history, prompt, end), off the engine loop."),
    Variable("WORKER_TOOL_THREADS", "64", "Threads of a worker process for its responses' server-side tool calls."),
    Variable("MERGE_STREAM_DELTAS", "true",
             "An item's deltas committed together are one delta event; `false`: one per token, as OpenAI sends them "
             "([Streaming contract](api.md#streaming-contract))."),
    Variable("EVENT_LOG_PACKING", "true",
             "Pack a response's events into one compressed block when it ends ([Packed event "
             "logs](architecture.md#packed-event-logs))."),
    Variable("PACK_QUEUE", "celery",
             "The queue of the tasks that pack finished responses' logs: the maintenance queue, which a GPU node's "
             "worker does not consume."),
    Variable("PACK_DELAY_S", "1",
             "A process asks for packing once per this interval, in one task for every response that ended in it "
             "meanwhile."),
    Variable("PACK_INTERVAL_S", "60",
             "Period of the beat task that packs finished responses whose rows were left (a process died, or the "
             "broker lost the request, between the end and the packing)."),
    Variable("PACKED_LOG_CACHE_MB", "64", "Decompressed packed logs each web process keeps for replays."),
    Variable("WEB_REQUEST_DB_THREADS", "8", "Database threads of one web process for requests (creates, retrieves)."),
    Variable("WEB_STREAM_DB_THREADS", "8",
             "Database threads of one web process for the reads of the streams, apart from those of the "
             "requests."),
    Variable("STREAM_READS_YIELD_S", "0.25",
             "While a create is under way in a web process, its stream reads wait for it at most this long, so that "
             "a burst's first events come first ([Serving benchmark](benchmarks.md#serving-benchmark)); `0` turns "
             "the wait off."),
    Variable("SSE_KEEPALIVE_S", "15", "Keep-alive comment interval on idle SSE streams."),
    Variable("WS_RESUME_GRACE_S", "30",
             "A foreground response whose WebSocket went away is cancelled when no socket of its session resumed it "
             "within this time."),
    Variable("DETACHED_SWEEP_INTERVAL_S", "5", "How often beat looks for such responses."),
    Variable("WS_REFUSAL_WAIT_S", "5",
             "A WebSocket refused at its handshake (a bad key or query) answers the client's first message with "
             "its error event; a client that sends nothing gets it after this long."),
    Variable("WS_MAX_PENDING_STEERS", "8",
             "Steering inputs that may wait for one response; more fail with `too_many_pending_steers`."),
    Variable("WS_CURSOR_TTL_S", "3600",
             "How long Redis keeps what the server sent to a socket session (a resume without `starting_after`)."),
    Variable("ECHO_TOKEN_DELAY_MS", "0", "Artificial delay per token of the `echo` engine (demos, tests)."),
    Variable("ECHO_PREFIX_CACHE_TOKENS", "1000000",
             "The `echo` engine's prefix cache, in prompt tokens (about what an H100 holds of gpt-oss-20b's KV "
             "cache): usage reports `cached_tokens` as vLLM's does. `0` turns it off."),
    Variable("ECHO_PREFILL_TOKENS_PER_S", "0",
             "The `echo` engine's prefill rate: each prompt token it does not hold in cache delays the first token "
             "by 1/rate seconds, and a worker's prefills take their turns (`30000` stands for gpt-oss-20b on an "
             "H100). `0`: prefill costs nothing."),
    Variable("PUBLIC_BASE_URL", "http://127.0.0.1:8000",
             "Where clients reach the server; code interpreter file outputs link to it."),
    Variable("MAX_TOOL_TURNS", "64", "A response that is still calling tools after this many engine turns fails."),
    Variable("TOOL_CALL_TIMEOUT_S", "30",
             "Wall-clock limit of one server-side tool call (python, MCP, browser); the python tool's description "
             "tells the model."),
    Variable("CONTAINERS_DIR", None, "Code interpreter containers (files and saved session), one folder each.",
             documented_default="`.run/containers`"),
    Variable("CONTAINER_LOCK_TTL_S", "30",
             "A code interpreter call's lease on its container (one call at a time on every node) runs out this long "
             "after its node stopped renewing it."),
    Variable("CONTAINER_IDLE_TIMEOUT_S", "1200",
             "A container unused this long expires (files and session deleted); `CONTAINER_EXPIRY_INTERVAL_S` is the "
             "beat period. A container made with `containers.create` may set its own (`expires_after.minutes`)."),
    Variable("CONTAINER_EXPIRY_INTERVAL_S", "60", "Period of the beat task that expires idle containers."),
    Variable("CONTAINER_FILE_MAX_BYTES", "104857600",
             "The largest file `containers.files.create` accepts (a 400 `file_too_large` above)."),
    Variable("FILES_DIR", None, "Where the Files API keeps the bytes of files (the `files` storage).",
             documented_default="`.run/files`"),
    Variable("FILES_S3_BUCKET", "",
             "With a bucket, the `files` storage is that bucket of an S3-compatible store that every node shares, "
             "rather than `FILES_DIR`; `FILES_S3_ENDPOINT_URL` (a store other than AWS's), `FILES_S3_REGION`, "
             "`FILES_S3_ADDRESSING_STYLE` (`path` for most local stores) and `FILES_S3_PREFIX` go with it; "
             "credentials from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` or the machine's role ([Files and "
             "batches](files-and-batches.md))."),
    Variable("FILES_S3_ENDPOINT_URL", None,
             "The endpoint of the `FILES_S3_BUCKET` store, for a store other than AWS's."),
    Variable("FILES_S3_REGION", None, "The region of the `FILES_S3_BUCKET` bucket."),
    Variable("FILES_S3_ADDRESSING_STYLE", None,
             "How the `FILES_S3_BUCKET` bucket is addressed: `path` for most local stores."),
    Variable("FILES_S3_PREFIX", "", "A prefix of the names of the files in the `FILES_S3_BUCKET` bucket."),
    Variable("INPUT_FILE_MAX_BYTES", "33554432",
             "The largest Files API file an `input_file` part may name (its text is read whole at create)."),
    Variable("BATCH_MAX_IN_FLIGHT", "4",
             "The most batch responses of a model queued or running at once, shared by its batches. Batch work "
             "competes with interactive work for the worker's CPU: raise it on GPU nodes, where a batch response "
             "waits on the GPU rather than on the CPU, and check the interactive latency ([Batch "
             "benchmark](benchmarks.md#batch-benchmark))."),
    Variable("BATCH_MAX_QUEUED_REQUESTS", "1000000",
             "A tenant's batch requests not yet ended (the tenant's `max_queued_batch_requests` overrides it)."),
    Variable("BATCH_COMPLETION_WINDOW_S", "86400", "The `24h` window of a batch (shorter only for tests)."),
    Variable("BATCH_REQUEST_MAX_ATTEMPTS", "3",
             "The most responses a batch request is given: one that failed with a `server_error` (its worker lost "
             "mid-answer) runs again until then, and only the last failure goes to the error file."),
    Variable("BATCH_TICK_INTERVAL_S", "10", "Period of beat's batch tick."),
    Variable("BATCH_STALL_S", "30", "How long a batch may go without a step before beat's batch tick takes it up."),
    Variable("FILE_MAX_BYTES", "536870912",
             "The largest file `files.create` accepts; `BATCH_FILE_MAX_BYTES` and `BATCH_FILE_MAX_LINES` for "
             '`purpose: "batch"`.'),
    Variable("BATCH_FILE_MAX_BYTES", "209715200", 'The largest file `files.create` accepts for `purpose: "batch"`.'),
    Variable("BATCH_FILE_MAX_LINES", "50000", 'The most lines of a file for `purpose: "batch"`.'),
    Variable("BATCH_FILE_DEFAULT_EXPIRY_S", "2592000",
             "A `batch` file without `expires_after` expires this long after its upload; `FILE_PURGE_INTERVAL_S` is "
             "the purge's beat period."),
    Variable("FILE_PURGE_INTERVAL_S", "300", "Period of the beat task that deletes expired files."),
    Variable("VECTOR_STORE_QUEUE", "celery",
             "The queue of vector store ingestion ([File search](file-search.md)): the maintenance queue, which a GPU "
             "node's worker does not consume, so that ingestion never delays a response."),
    Variable("VECTOR_STORE_MAX_STORES", "1000", "The most vector stores of a tenant; past it a create is a 429."),
    Variable("VECTOR_STORE_MAX_FILES", "10000", "The most files in all of a tenant's vector stores; past it a 429."),
    Variable("VECTOR_STORE_MAX_BYTES", "1073741824",
             "The most bytes of text in all of a tenant's vector stores (a file being read counts for its size); "
             "past it a 429."),
    Variable("VECTOR_STORE_FILE_MAX_BYTES", "33554432",
             "The largest file a vector store reads; a larger one is a 400 when it is added."),
    Variable("VECTOR_STORE_INGEST_STALL_S", "60",
             "A file that no worker is reading is sent to a worker again this long after its task was sent (a "
             "lost message, a worker lost midway); a worker reading a file shows its progress more often than "
             "this."),
    Variable("VECTOR_STORE_INGEST_MAX_ATTEMPTS", "3",
             "Starts of a file's ingestion that stalled before it fails with a `server_error` (waiting in the "
             "queue is no attempt)."),
    Variable("VECTOR_STORE_SWEEP_INTERVAL_S", "15", "Period of the beat task that sends stalled ingestions again."),
    Variable("VECTOR_STORE_EMBEDDING_MODEL", "wordllama-l2-supercat",
             "The model of `EMBEDDING_MODELS` that embeds the chunks of new vector stores, whose searches then rank "
             "by meaning and by words together (hybrid); empty: words only. A store keeps the model it was created "
             "with."),
    Variable("VECTOR_STORE_VECTOR_CACHE_MB", "512",
             "Each web process keeps the chunk vectors of the stores it searched in memory, at most this many MiB "
             "(the least recently searched go first)."),
    Variable("COMPACTION_MAX_OUTPUT_TOKENS", "2048",
             "The most tokens the model may spend on the summary turn of `responses.compact`."),
    Variable("SANDBOX_MEMORY_MB", "1024", "Limit of one python call: its address space."),
    Variable("SANDBOX_CPU_S", "30", "Limit of one python call: its CPU seconds."),
    Variable("SANDBOX_MAX_PROCESSES", "32", "Limit of one python call: its processes."),
    Variable("SANDBOX_MAX_OUTPUT_BYTES", "65536", "Limit of one python call: its printed output."),
    Variable("SANDBOX_MAX_DISK_MB", "256", "Limit of one python call: the size of one file."),
    Variable("TOOLS_ALLOWED_PRIVATE_HOSTS", "",
             "Comma-separated `host` or `host:port` that MCP URLs may reach although they are loopback, private, "
             "link-local or metadata addresses."),
    Variable("WEB_SEARCH_INDEX_PATH", None, "The local web search index (SQLite FTS5).",
             documented_default="`.run/search-index.sqlite3`"),
    Variable("WEB_SEARCH_MCP_SERVER", "",
             "Label of a registered MCP server (with `search` and `fetch` tools) to search with instead of the local "
             "index."),
    Variable("RESPONSE_RETENTION_DAYS", "30",
             "Stored responses are deleted this many days after they end; `0` keeps them forever. A tenant can "
             "override it in the admin ([Retention](background-jobs.md#retention))."),
    Variable("RETENTION_INTERVAL_S", "300", "Period of the retention purge."),
    Variable("RETENTION_PURGE_BATCH", "500", "The most responses the retention purge deletes per transaction."),
    Variable("COMPLETION_WINDOW_2H_S", "7200",
             "Length of the `2h` completion window ([Deferred completion "
             "windows](background-jobs.md#deferred-completion-windows))."),
    Variable("COMPLETION_WINDOW_8H_S", "28800", "Length of the `8h` completion window."),
    Variable("DEFERRED_PROMOTE_BEFORE_S", "1800",
             "A deferred response still waiting this long before its deadline is promoted to the interactive "
             "priority."),
    Variable("DEFERRED_DISPATCH_INTERVAL_S", "2",
             "Period of the beat task that releases and promotes deferred responses."),
    Variable("WEBHOOK_QUEUE", "webhooks", "Celery queue of webhook deliveries."),
    Variable("WEBHOOK_TIMEOUT_S", "10", "The whole of one delivery attempt (connect, send, answer)."),
    Variable("WEBHOOK_RETRY_BASE_S", "30", "First retry delay of a delivery (doubling, with jitter: ×0.5–1)."),
    Variable("WEBHOOK_RETRY_MAX_S", "21600", "The longest retry delay of a delivery."),
    Variable("WEBHOOK_RETRY_WINDOW_S", "259200", "How long a delivery is retried before it is given up (72 h)."),
    Variable("WEBHOOK_SWEEP_INTERVAL_S", "10", "Period of the beat task that queues the retries that are due."),
    Variable("WEBHOOK_MAX_QUEUED_PER_ENDPOINT", "4",
             "Attempts of one endpoint queued or running at once; the rest of its backlog waits in the database."),
    Variable("BEAT_MAX_LOOP_INTERVAL_S", "5", "Beat notices a new or changed schedule within this."),
    Variable("JSON_BODY_MAX_BYTES", "16777216",
             "The largest JSON body (413 above, before it is read) ([Limits and "
             "abuse](operating.md#limits-and-abuse))."),
    Variable("JSON_BODY_MAX_DEPTH", "64", "The deepest nesting of a JSON body (400 above)."),
    Variable("UPLOAD_MAX_FILES", "1", "Files one multipart upload may have (400 above)."),
    Variable("UPLOAD_MAX_FIELDS", "16", "Parts other than files one multipart upload may have (400 above)."),
    Variable("TENANT_MAX_CONCURRENT_FOREGROUND", "256",
             "Foreground responses one tenant may have queued or running at once (429 above); `0`: no cap."),
    Variable("TENANT_MAX_SCHEDULES", "100",
             "Scheduled responses one tenant may have (400 `object_limit_reached` above); `0`: no cap."),
    Variable("TENANT_MAX_WEBHOOK_ENDPOINTS", "20",
             "Webhook endpoints one tenant may have (400 `object_limit_reached` above); `0`: no cap."),
    Variable("TENANT_MAX_PROMPT_VERSIONS", "1000",
             "Prompt template versions one tenant may have, all its prompts together (400 `object_limit_reached` "
             "above); `0`: no cap."),
    Variable("LOG_LEVEL", "INFO", "Root log level."),
    # Used by `make run` and the Procfile's processes.
    Variable("PORT", "8000", "Daphne's port (`make run PORT=8001`).", section="processes", read_by="processes"),
    Variable("WORKER_CONCURRENCY", None,
             "Threads of the Celery worker: one waits, without waking, for each response on the engine loop; the "
             "rest run the other tasks.",
             documented_default="slots + 8", section="processes"),
    Variable("WORKER_QUEUES", "celery,model.echo",
             "Queues the worker consumes (add `model.<id>` for each served model).",
             section="processes", read_by="processes"),
    Variable("WEBHOOK_CONCURRENCY", "16", "Threads of the `webhooks` worker (one delivery attempt each).",
             section="processes", read_by="processes"),
)

_BY_NAME: dict[str, Variable] = {variable.name: variable for variable in VARIABLES}
if len(_BY_NAME) != len(VARIABLES):
    raise ValueError("project/environment.py: a variable has two rows")

# env_bool's words for "on": anything else that is set, the empty string included, is off.
_TRUE = {"1", "true", "yes", "on"}


def variable(name: str) -> Variable:
    """The row of ``name``; KeyError for a name without one (it would be read undocumented)."""
    return _BY_NAME[name]


def _default(name: str, computed: object = None) -> str | None:
    """The table's default of ``name``; an error where settings.py would compute one as well."""
    default = variable(name).default
    if default is not None and computed is not None:
        raise ValueError(f"{name}: the table's default {default!r} would hide the computed {computed!r}")
    return default


def optional_text(name: str) -> str | None:
    """The value as set (the empty string too), else the table's default, else None."""
    default = _default(name)
    value = os.environ.get(name)
    return value if value is not None else default


def text(name: str, computed: str | None = None) -> str:
    """The value as set (the empty string too), else the table's default, else ``computed``."""
    default = _default(name, computed)
    value = os.environ.get(name)
    for candidate in (value, default, computed):
        if candidate is not None:
            return candidate
    raise ValueError(f"{name} has no default: the table or settings.py must give one")


def integer(name: str) -> int:
    """A whole number written as one (``int("3.5")`` is an error); unset: the default."""
    return int(text(name))


def number(name: str, computed: float | None = None) -> float:
    """A float; unset or empty: the table's default, else ``computed``."""
    default = _default(name, computed)
    value = os.environ.get(name)
    if value:
        return float(value)
    if default is not None:
        return float(default)
    if computed is None:
        raise ValueError(f"{name} has no default: the table or settings.py must give one")
    return float(computed)


def flag(name: str) -> bool:
    """On for 1, true, yes, on (any case, spaces around); any other value set is off; unset: the default."""
    return text(name).strip().lower() in _TRUE
