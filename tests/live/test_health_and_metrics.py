"""GET /healthz and GET /metrics on the live stack: every check named, a model without a
live worker is unavailable, observations made in the worker reach the web's /metrics
through Redis, and the SSE gauge follows the streams that are open."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest
import redis
from django.conf import settings
from django.test import AsyncClient, override_settings
from prometheus_client.parser import text_string_to_metric_families
from redis.backoff import NoBackoff
from redis.retry import Retry

from responses_app.dispatch import broker, fleet
from responses_app.models import Response
from responses_app.observability import collector, metrics
from responses_app.observability.recorder import Recorder
from tests.helpers import reasoning_and_answer, wait_for_status, wait_until
from tests.live.stack import free_port

CHECKS = {"database", "redis", "broker", "workers"}
HISTOGRAMS = {"responses_time_to_first_event_seconds", "responses_output_tokens_per_second",
              "responses_event_batch_write_seconds", "responses_vector_store_search_seconds",
              "responses_chat_completion_seconds", "responses_prompt_tokens"}
GAUGES = {"responses_by_status", "responses_queue_depth", "responses_sse_streams_active",
          "responses_metrics_source_up", "responses_batch_requests", "responses_vector_store_files"}
LONG_SCRIPT = reasoning_and_answer("Thinking about it for a while, one word at a time, " * 3,
                                   "An answer that takes a few seconds to stream out, token by token.")


# --- helpers ---------------------------------------------------------------------------------

def root(stack) -> str:
    return stack.base_url.removesuffix("/v1")


def healthz(stack) -> tuple[int, dict]:
    reply = httpx.get(f"{root(stack)}/healthz", timeout=10)
    return reply.status_code, reply.json()


def scrape(stack) -> dict:
    reply = httpx.get(f"{root(stack)}/metrics", timeout=10)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    return {family.name: family for family in text_string_to_metric_families(reply.text)}


def value(families: dict, sample: str, **labels: str) -> float:
    """One sample's value; 0 for a series not exported yet (a histogram before its first observation)."""
    family = next(families[name] for name in families if sample == name or sample.startswith(f"{name}_"))
    matches = [s.value for s in family.samples if s.name == sample and s.labels == labels]
    assert len(matches) <= 1, (sample, labels)
    return matches[0] if matches else 0.0


def worker_name(stack) -> str:
    return f"worker-{stack.port}@{socket.gethostname()}"


def is_running(stack, name: str) -> bool:
    process = stack.processes.get(name)
    return process is not None and process.poll() is None


def echo_only() -> dict:
    return {"echo": settings.MODEL_REGISTRY["echo"]}


def in_process_get(path: str) -> tuple[int, dict | str]:
    """The view through Django's ASGI request path in this process, under this test's settings."""
    async def get():
        return await AsyncClient().get(path)
    reply = asyncio.run(get())
    return reply.status_code, reply.json() if path == "/healthz" else reply.content.decode()


def wait_for_quiet_echo(timeout: float = 30) -> None:
    """No echo response queued or running, so that every observation from here on is ours."""
    wait_until(lambda: not Response.objects.filter(model="echo", status__in=["queued", "in_progress"]).exists(),
               timeout=timeout)


@pytest.fixture
def metrics_redis() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(settings.REDIS_URL, decode_responses=True)
    yield client
    client.close()


# --- /healthz ----------------------------------------------------------------------------------

def test_healthz_names_every_check_and_is_unavailable_while_a_configured_model_has_no_live_worker(stack):
    status, body = healthz(stack)

    assert set(body["checks"]) == CHECKS
    assert body["checks"]["database"]["ok"] and body["checks"]["redis"]["ok"] and body["checks"]["broker"]["ok"]
    workers = body["checks"]["workers"]
    assert set(workers) == set(stack.registry)
    assert workers["echo"]["ok"] is True and worker_name(stack) in workers["echo"]["workers"]
    # The echo models' worker always runs; the tiny vLLM models' only once a vLLM test asked for it.
    served = {model: entry["engine"] == "echo" or is_running(stack, "vllm-worker")
              for model, entry in stack.registry.items()}
    for model, ok in served.items():
        assert workers[model]["ok"] is ok, model
        assert workers[model]["queue"] == f"model.{model}"
        if not ok:
            assert workers[model]["workers"] == []
    assert (status, body["status"]) == ((200, "ok") if all(served.values()) else (503, "unavailable"))


def test_healthz_is_200_when_every_configured_model_has_a_live_worker(stack, db_access):
    with override_settings(MODEL_REGISTRY=echo_only()):
        status, body = in_process_get("/healthz")

    assert status == 200
    assert body["status"] == "ok"
    assert set(body["checks"]) == CHECKS
    assert all(body["checks"][name]["ok"] for name in ("database", "redis", "broker"))
    assert set(body["checks"]["workers"]) == {"echo"}
    assert body["checks"]["workers"]["echo"]["ok"] is True
    assert worker_name(stack) in body["checks"]["workers"]["echo"]["workers"]


def test_a_failing_check_is_reported_as_503_and_the_others_still_answer(stack, db_access):
    with override_settings(MODEL_REGISTRY=echo_only(), REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"):
        status, body = in_process_get("/healthz")

    assert status == 503
    assert body["status"] == "unavailable"
    assert body["checks"]["redis"] == {"ok": False, "error": "ConnectionError"}
    assert body["checks"]["database"]["ok"] and body["checks"]["broker"]["ok"]
    assert body["checks"]["workers"]["echo"]["ok"] is True


def test_stopping_the_worker_turns_its_model_red_and_its_tasks_wait_in_the_queue(stack, alice):
    assert healthz(stack)[1]["checks"]["workers"]["echo"]["ok"] is True
    stack.kill("worker")
    try:
        # A killed worker's heartbeat goes stale within FLEET_NODE_TTL_S.
        status, body = wait_until(lambda: (reply := healthz(stack))[1]["checks"]["workers"]["echo"]["ok"] is False
                                  and reply, timeout=settings.FLEET_NODE_TTL_S + 10)
        assert status == 503 and body["status"] == "unavailable"
        assert body["checks"]["workers"]["echo"] == {"ok": False, "queue": "model.echo", "workers": []}
        assert body["checks"]["broker"]["ok"] is True  # the broker itself is fine

        waiting = alice.responses.create(model="echo", input="wait for a worker", background=True)
        assert wait_until(lambda: value(scrape(stack), "responses_queue_depth", model="echo",
                                        queue="model.echo") == 1, timeout=10)
        assert alice.responses.retrieve(waiting.id).status == "queued"
    finally:
        stack.ensure_running()

    assert wait_for_status(alice, waiting.id, {"completed"}).status == "completed"
    assert value(scrape(stack), "responses_queue_depth", model="echo", queue="model.echo") == 0
    wait_until(lambda: healthz(stack)[1]["checks"]["workers"]["echo"]["ok"] is True,
               timeout=settings.FLEET_NODE_TTL_S + 10)


def test_the_worker_inspection_costs_one_broadcast_per_cache_period(stack, db_access):
    inspector = broker.WorkerInspector(ttl=60)
    for _ in range(10):
        assert worker_name(stack) in inspector.queues_by_worker()
    assert inspector.broadcasts == 1


def test_healthz_follows_the_workers_heartbeats(stack, db_access):
    """A model turns green with a worker's heartbeat, and red once it is older than
    FLEET_NODE_TTL_S (a worker killed writes no farewell)."""
    registry = {**echo_only(), "ghost": {"engine": "echo", "queue": "model.ghost"}}
    heartbeat = fleet.Heartbeat(node="ghost-node", worker="ghost@test", queues=("model.ghost",), running=0,
                                slots=4, slot_pool="ghost", prefill_backlog_s=0.0)
    with override_settings(MODEL_REGISTRY=registry):
        assert in_process_get("/healthz")[1]["checks"]["workers"]["ghost"]["ok"] is False
        fleet.beat("ghost|test", heartbeat)
        try:
            status, body = in_process_get("/healthz")
            assert body["checks"]["workers"]["ghost"] == {"ok": True, "queue": "model.ghost",
                                                          "workers": ["ghost@test"]}
            fleet.beat("ghost|test", replace(heartbeat, at=time.time() - settings.FLEET_NODE_TTL_S - 1))
            assert in_process_get("/healthz")[1]["checks"]["workers"]["ghost"]["ok"] is False
        finally:
            fleet.leave("ghost|test")


# --- /metrics ----------------------------------------------------------------------------------

def test_metrics_parse_and_name_every_family_with_its_type(stack):
    families = scrape(stack)

    assert {name: families[name].type for name in GAUGES} == dict.fromkeys(GAUGES, "gauge")
    assert {name: families[name].type for name in HISTOGRAMS} == dict.fromkeys(HISTOGRAMS, "histogram")
    assert families["responses_dispatch_decisions"].type == "counter"
    assert {s.labels["source"]: s.value for s in families["responses_metrics_source_up"].samples} == {
        "database": 1, "redis": 1, "broker": 1}
    assert {s.labels["model"] for s in families["responses_by_status"].samples} >= set(stack.registry)
    assert {(s.labels["model"], s.labels["queue"]) for s in families["responses_queue_depth"].samples} == {
        (model, f"model.{model}") for model in stack.registry}


def test_metrics_show_echo_responses_by_status_and_the_workers_observations(stack, alice, db_access):
    wait_for_quiet_echo()
    time.sleep(2)  # the worker's last observations reach Redis within a push interval
    before = scrape(stack)

    # Slow enough that each response's events span several batches (one every 50 ms).
    created = [alice.responses.create(model="echo", input=reasoning_and_answer(f"Think about {n} for a moment.",
                                                                                f"Answer {n}, in a few words."),
                                      metadata={"echo_token_delay_ms": "20"})
               for n in range(3)]
    assert {response.status for response in created} == {"completed"}

    def ttfe_count(families: dict) -> float:
        return value(families, "responses_time_to_first_event_seconds_count", model="echo")

    wait_until(lambda: ttfe_count(scrape(stack)) >= ttfe_count(before) + 3, timeout=10)
    time.sleep(2)  # anything observed twice would have arrived by now
    db_count_before = Response.objects.filter(model="echo", status="completed").count()
    after = scrape(stack)
    db_count_after = Response.objects.filter(model="echo", status="completed").count()

    def delta(sample: str, **labels: str) -> float:
        return value(after, sample, **labels) - value(before, sample, **labels)

    gauge = value(after, "responses_by_status", model="echo", status="completed")
    assert db_count_before <= gauge <= db_count_after
    assert gauge >= len(created)

    rows = list(Response.objects.filter(pk__in=[response.id for response in created]))
    lifetimes = [(row.completed_at - row.created_at).total_seconds() for row in rows]
    # Time to first event: once per response, and no longer than the response took to finish.
    assert delta("responses_time_to_first_event_seconds_count", model="echo") == 3
    assert 0 < delta("responses_time_to_first_event_seconds_sum", model="echo") <= sum(lifetimes) + 3 * 0.5
    # Tokens per second: once per response, the output tokens over at most the response's lifetime.
    assert delta("responses_output_tokens_per_second_count", model="echo") == 3
    least_rate = sum(row.usage["output_tokens"] / (lifetime + 0.5) for row, lifetime in zip(rows, lifetimes,
                                                                                           strict=True))
    assert delta("responses_output_tokens_per_second_sum", model="echo") >= least_rate
    # Every response commits at least two batches: response.in_progress, then the rest with its end.
    assert delta("responses_event_batch_write_seconds_count") >= 2 * 3
    assert delta("responses_event_batch_write_seconds_sum") > 0

    for name in HISTOGRAMS:
        for labels in {tuple(sorted(s.labels.items())) for s in after[name].samples if s.name.endswith("_count")}:
            buckets = [s for s in after[name].samples if s.name.endswith("_bucket")
                       and {k: v for k, v in s.labels.items() if k != "le"} == dict(labels)]
            counts = [s.value for s in buckets]
            assert counts == sorted(counts), name  # cumulative
            assert buckets[-1].labels["le"] == "+Inf"
            assert counts[-1] == value(after, f"{name}_count", **dict(labels))


def test_metrics_count_chat_completions_by_model_and_stream(stack, alice):
    def completions(families: dict, stream: str) -> float:
        return value(families, "responses_chat_completion_seconds_count", model="echo", stream=stream)

    before = scrape(stack)
    messages = [{"role": "user", "content": "Count me"}]
    alice.chat.completions.create(model="echo", messages=messages)
    alice.chat.completions.create(model="echo", messages=messages, n=2)  # one completion of two choices
    list(alice.chat.completions.create(model="echo", messages=messages, stream=True))

    wait_until(lambda: completions(scrape(stack), "true") >= completions(before, "true") + 1, timeout=10)
    after = scrape(stack)
    assert completions(after, "false") == completions(before, "false") + 2
    assert completions(after, "true") == completions(before, "true") + 1


def test_metrics_count_prompt_tokens_served_from_cache_and_computed(stack, carol):
    def tokens(families: dict, source: str) -> float:
        return value(families, "responses_prompt_tokens_sum", model="echo", node=settings.NODE_ID, source=source)

    before = scrape(stack)
    first = carol.responses.create(model="echo", input="Count my prompt")
    second = carol.responses.create(model="echo", input="Count my prompt")  # its prefix is cached
    assert second.usage.input_tokens_details.cached_tokens > 0
    spent = first.usage.input_tokens + second.usage.input_tokens
    cached = second.usage.input_tokens_details.cached_tokens + first.usage.input_tokens_details.cached_tokens

    def counted(families: dict) -> bool:
        # Each source on its own: another response's tokens of one source must not end the wait
        # before ours of the other are counted.
        return (tokens(families, "cached") - tokens(before, "cached") >= cached
                and tokens(families, "computed") - tokens(before, "computed") >= spent - cached)

    try:
        wait_until(lambda: counted(scrape(stack)), timeout=10)
    except AssertionError:
        pass  # the assertions below say which source fell short
    after = scrape(stack)
    # Other tests' responses may end meanwhile: at least ours are counted, each as it was served.
    assert tokens(after, "cached") - tokens(before, "cached") >= cached
    assert tokens(after, "computed") - tokens(before, "computed") >= spent - cached


def test_metrics_count_dispatch_decisions_by_node(stack, carol, db_access):
    from responses_app.models import Response

    def decisions(families: dict, decision: str) -> float:
        return value(families, "responses_dispatch_decisions_total", model="echo", node=settings.NODE_ID,
                     decision=decision)

    before = scrape(stack)
    first = carol.responses.create(model="echo", input="Where do I run?")
    second = carol.responses.create(model="echo", input="And now?", previous_response_id=first.id)

    after = scrape(stack)
    # The stack's one echo node (NODE_ID): the first turn to it for its load, the second for its prefix.
    assert decisions(after, "balanced") >= decisions(before, "balanced") + 1
    assert decisions(after, "preferred") >= decisions(before, "preferred") + 1
    assert set(Response.objects.filter(pk__in=[first.id, second.id]).values_list("node", flat=True)) == {
        settings.NODE_ID}


def test_metrics_show_vector_store_files_by_status_and_each_search(stack, alice, db_access):
    from responses_app.models import VectorStoreFile

    before = scrape(stack)
    store = alice.vector_stores.create(name="metrics")
    alice.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=("a.md", b"Metrics count searches."))
    for _ in range(3):
        alice.vector_stores.search(store.id, query="searches")

    def searches(families: dict) -> float:
        return value(families, "responses_vector_store_search_seconds_count", source="api")

    wait_until(lambda: searches(scrape(stack)) >= searches(before) + 3, timeout=10)
    after = scrape(stack)
    assert searches(after) == searches(before) + 3
    assert value(after, "responses_vector_store_search_seconds_sum", source="api") > value(
        before, "responses_vector_store_search_seconds_sum", source="api")
    assert value(after, "responses_vector_store_files", status="completed") == VectorStoreFile.objects.filter(
        status="completed").count() >= 1
    assert {s.labels["status"] for s in after["responses_vector_store_files"].samples} == {
        "in_progress", "completed", "cancelled", "failed"}


def test_sse_gauge_counts_open_streams_and_falls_back_when_they_end_or_disconnect(stack, alice):
    def open_streams() -> float:
        return value(scrape(stack), "responses_sse_streams_active")

    baseline = open_streams()
    slow = {"echo_token_delay_ms": "40"}

    finishing = alice.responses.create(model="echo", input=LONG_SCRIPT, stream=True, metadata=slow)
    finishing_events = iter(finishing)
    events = [next(finishing_events).to_dict()]
    assert wait_until(lambda: open_streams() == baseline + 1, timeout=5)

    leaving = alice.responses.create(model="echo", input=LONG_SCRIPT, stream=True, background=True, metadata=slow)
    leaving_events = iter(leaving)
    next(leaving_events), next(leaving_events)
    assert wait_until(lambda: open_streams() == baseline + 2, timeout=5)
    leaving.close()  # the client goes away mid-stream
    assert wait_until(lambda: open_streams() == baseline + 1, timeout=5)

    events += [event.to_dict() for event in finishing_events]
    assert events[-1]["type"] == "response.completed"
    assert wait_until(lambda: open_streams() == baseline, timeout=5)


# --- the machinery behind them, against the stack's Redis ----------------------------------------

def test_a_web_process_that_died_stops_counting_its_streams(stack, metrics_redis):
    alive, dead = f"test-alive:{uuid.uuid4().hex}", f"test-dead:{uuid.uuid4().hex}"
    metrics_redis.set(metrics.sse_streams_key(alive), 2, ex=30)
    metrics_redis.sadd(metrics.SSE_STREAMS_INDEX, alive, dead)  # dead's key has expired
    try:
        processes = sorted(metrics_redis.smembers(metrics.SSE_STREAMS_INDEX))
        others = sum(int(metrics_redis.get(metrics.sse_streams_key(p)) or 0) for p in processes if p != alive)
        gauge = collector.sse_streams(metrics.redis_client(), processes)
        assert gauge.samples[0].value == 2 + others
        assert dead not in metrics_redis.smembers(metrics.SSE_STREAMS_INDEX)
        assert alive in metrics_redis.smembers(metrics.SSE_STREAMS_INDEX)
    finally:
        metrics_redis.delete(metrics.sse_streams_key(alive))
        metrics_redis.srem(metrics.SSE_STREAMS_INDEX, alive, dead)


def test_observations_survive_a_redis_outage_and_arrive_with_the_next_push(stack, metrics_redis):
    histogram = metrics.HistogramSpec(f"test_histogram_{uuid.uuid4().hex}", "test", ("model",), (1.0, 10.0))
    outage = redis.Redis(port=free_port(), socket_connect_timeout=0.5, socket_timeout=0.5)
    client = outage
    recorder = Recorder(client=lambda: client)
    try:
        recorder.observe(histogram, ("echo",), 0.5)
        recorder.observe(histogram, ("echo",), 5.0)
        assert recorder.push() is False
        recorder.observe(histogram, ("echo",), 50.0)
        client = metrics.redis_client()
        assert recorder.push() is True

        family = collector.histogram_family(histogram, metrics_redis.hgetall(histogram.key))
        samples = {(s.name, s.labels.get("le")): s.value for s in family.samples}
        assert samples == {
            (f"{histogram.name}_bucket", "1.0"): 1, (f"{histogram.name}_bucket", "10.0"): 2,
            (f"{histogram.name}_bucket", "+Inf"): 3, (f"{histogram.name}_count", None): 3,
            (f"{histogram.name}_sum", None): 55.5,
        }
        assert recorder.push() is True  # nothing twice
        assert metrics_redis.hget(histogram.key, metrics.series_field(("echo",), "count")) == "3"
    finally:
        metrics_redis.delete(histogram.key)
        outage.close()


def test_a_push_made_while_another_is_in_flight_waits_for_it_and_loses_nothing(metrics_redis):
    """The pusher thread's push holds what it took until Redis answers; an explicit push
    meanwhile must not report success without those observations."""
    histogram = metrics.HistogramSpec(f"test_histogram_{uuid.uuid4().hex}", "test", ("model",), (1.0, 10.0))
    silent = socket.socket()  # accepts connections and never answers: a push hangs on it
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    # One try (redis-py's default is ten, backing off): the push hangs for 0.5 s, then fails.
    hanging = redis.Redis(port=silent.getsockname()[1], socket_connect_timeout=0.5, socket_timeout=0.5,
                          retry=Retry(NoBackoff(), 0))
    client = hanging
    recorder = Recorder(client=lambda: client)
    try:
        recorder.observe(histogram, ("echo",), 0.5)
        recorder.observe(histogram, ("echo",), 5.0)
        in_flight = threading.Thread(target=recorder.push)
        in_flight.start()
        time.sleep(0.1)  # that push has taken both observations and waits on the silent server
        client = metrics.redis_client()
        recorder.observe(histogram, ("echo",), 50.0)
        assert recorder.push() is True
        in_flight.join()
        assert metrics_redis.hget(histogram.key, metrics.series_field(("echo",), "count")) == "3"
    finally:
        metrics_redis.delete(histogram.key)
        hanging.close()
        silent.close()


def test_metrics_still_answer_when_the_metrics_redis_is_down(stack, db_access):
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"):
        status, text = in_process_get("/metrics")

    assert status == 200
    families = {family.name: family for family in text_string_to_metric_families(text)}
    assert {s.labels["source"]: s.value for s in families["responses_metrics_source_up"].samples} == {
        "database": 1, "redis": 0, "broker": 1}
    assert "responses_by_status" in families and "responses_sse_streams_active" not in families
