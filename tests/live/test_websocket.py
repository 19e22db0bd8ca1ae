"""The Responses WebSocket driven by the real SDK (``client.responses.connect()``): lanes,
steering, a dropped socket resumed, bad keys and input, many sockets at once. Every
response made over a socket is an ordinary persisted one: its SSE replay is the same
stream, event for event."""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time
import uuid
from typing import Any

import openai
import pytest
from websockets.exceptions import ConnectionClosed

from tests.conftest import sdk_client
from tests.helpers import (
    TERMINAL_EVENTS,
    assert_dense,
    ended,
    new_key,
    new_tenant,
    of_response,
    read_until,
    reasoning_and_answer,
    sse_replay,
    wait_for_status,
    without_lane,
)
from tests.live.stack import LOG_DIR

pytestmark = pytest.mark.core

SLOW = {"echo_token_delay_ms": "30"}
WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Weather of a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def test_a_response_over_the_socket_is_the_stream_that_sse_replays(alice: openai.OpenAI):
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input="Hello over a socket")
        events = read_until(connection, ended())
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    assert_dense(events)
    assert all("stream_id" not in e for e in events)  # no lane was named
    response_id = events[0]["response"]["id"]
    assert events == sse_replay(alice, response_id)
    stored = alice.responses.retrieve(response_id)
    assert stored.status == "completed" and "Hello over a socket" in stored.output_text
    assert [i.to_dict() for i in stored.output] == events[-1]["response"]["output"]


def test_the_async_client_connects_too(alice_key: str, stack):
    async def run() -> list[dict[str, Any]]:
        client = openai.AsyncOpenAI(base_url=stack.base_url, api_key=alice_key, max_retries=0)
        async with client.responses.connect() as connection:
            await connection.response.create(model="echo", input="Hello, async")
            events = []
            async for event in connection:
                events.append(event.to_dict())
                if event.type in TERMINAL_EVENTS:
                    return events
        raise AssertionError("the socket closed early")

    events = asyncio.run(run())
    assert events[-1]["type"] == "response.completed"
    assert "Hello, async" in events[-1]["response"]["output"][-1]["content"][0]["text"]


def test_lanes_run_concurrently_and_each_lane_in_order(alice: openai.OpenAI):
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input="First on lane a", stream_id="a", metadata=SLOW)
        connection.response.create(model="echo", input="Second on lane a", stream_id="a", metadata=SLOW)
        connection.response.create(model="echo", input="Only on lane b", stream_id="b", metadata=SLOW)
        events = read_until(connection, ended(3))
    assert {e["stream_id"] for e in events} == {"a", "b"}  # every event names its lane
    lane_a = [e for e in events if e["stream_id"] == "a"]
    lane_b = [e for e in events if e["stream_id"] == "b"]
    first, second = [e["response"]["id"] for e in lane_a if e["type"] == "response.created"]
    # FIFO: all of the first response, then all of the second, each dense from 0.
    assert lane_a == of_response(lane_a, first) + of_response(lane_a, second)
    for response_id in (first, second):
        assert [without_lane(e) for e in of_response(lane_a, response_id)] == sse_replay(alice, response_id)
    assert "Second on lane a" in lane_a[-1]["response"]["output"][-1]["content"][0]["text"]
    # The second waited for the first: it started after the first had ended.
    first_done, second_row = alice.responses.retrieve(first), alice.responses.retrieve(second)
    assert second_row.created_at <= first_done.completed_at
    # Lane b ran beside lane a's first response, not after it.
    position = {id(e): i for i, e in enumerate(events)}
    b_created = position[id(lane_b[0])]
    a_first_end = position[id(of_response(lane_a, first)[-1])]
    assert b_created < a_first_end


def test_a_steer_ends_the_running_response_as_steered_and_its_successor_takes_the_input(alice: openai.OpenAI):
    script = reasoning_and_answer("Let me think about this slowly. " * 12, "The first answer.")
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input=script, stream_id="main", metadata=SLOW,
                                   instructions="Be brief.")
        events = read_until(connection, lambda es: es[-1]["type"] == "response.reasoning_text.delta")
        parent = events[0]["response"]["id"]
        connection.response.steer(previous_response_id=parent, input="Actually, talk about tea.")
        events += read_until(connection, ended(2))
    accepted = [e for e in events if e["type"] == "response.steer.accepted"]
    assert len(accepted) == 1 and accepted[0]["steer"]["previous_response_id"] == parent
    assert accepted[0]["stream_id"] == "main"
    stream = [e for e in events if not e["type"].startswith("response.steer")]
    steered = of_response(stream, parent)
    assert steered[-1]["type"] == "response.incomplete"
    assert steered[-1]["response"]["incomplete_details"] == {"reason": "steered"}
    assert [item["type"] for item in steered[-1]["response"]["output"]] == ["reasoning"]  # stopped after it
    successor = next(e["response"] for e in stream if e["type"] == "response.created"
                     and e["response"]["id"] != parent)
    assert successor["previous_response_id"] == parent
    assert successor["instructions"] == "Be brief."  # inherited settings
    assert stream[-1]["type"] == "response.completed" and "talk about tea" in stream[-1]["response"]["output"][
        -1]["content"][0]["text"]
    items = alice.responses.input_items.list(successor["id"], order="asc").data
    assert [(i.role, i.content[0].text) for i in items] == [("user", "Actually, talk about tea.")]
    assert [without_lane(e) for e in of_response(stream, successor["id"])] == sse_replay(alice, successor["id"])


def test_steering_a_response_that_stops_for_a_function_call_stays_pending_for_the_explicit_continuation(
        alice: openai.OpenAI):
    arguments = '{"city": "' + "Paris " * 20 + '"}'
    script = (f"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{arguments}<|call|>"
              "<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>")
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input=script, tools=[WEATHER_TOOL], metadata=SLOW, stream_id="t")
        events = read_until(connection, lambda es: es[-1]["type"] == "response.function_call_arguments.delta")
        parent = events[0]["response"]["id"]
        connection.response.steer(previous_response_id=parent, input="Also say which umbrella to take.")
        events += read_until(connection, lambda es: es[-1]["type"] == "response.steer.pending")
        completed = next(e for e in events if e["type"] == "response.completed")
        call = completed["response"]["output"][-1]
        pending = events[-1]
        assert pending["reason"] == "waiting_for_required_input" and pending["stream_id"] == "t"
        assert pending["required_input"] == [{"type": "function_call_output", "call_id": call["call_id"],
                                              "name": "get_weather"}]
        assert pending["steer"]["id"] == next(e for e in events if e["type"] == "response.steer.accepted")[
            "steer"]["id"]
        connection.response.create(model="echo", previous_response_id=parent, stream_id="t", input=[
            {"type": "function_call_output", "call_id": call["call_id"], "output": '{"sky": "rain"}'}])
        events = read_until(connection, ended())
    continuation = events[0]["response"]["id"]
    assert events[-1]["type"] == "response.completed"
    items = alice.responses.input_items.list(continuation, order="asc").data
    # The queued input first, then the request's own.
    assert [i.type for i in items] == ["message", "function_call_output"]
    assert items[0].content[0].text == "Also say which umbrella to take."


def test_input_queued_while_a_response_finishes_normally_goes_to_a_successor(alice: openai.OpenAI):
    script = "<|channel|>final<|message|>" + "A long final answer. " * 15 + "<|return|>"
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input=script, metadata=SLOW)
        events = read_until(connection, lambda es: es[-1]["type"] == "response.output_text.delta")
        parent = events[0]["response"]["id"]
        connection.response.steer(previous_response_id=parent, input="One more thing.")
        connection.response.steer(previous_response_id=parent, input=[
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And another."}]}])
        events += read_until(connection, ended(2))
    stream = [e for e in events if not e["type"].startswith("response.steer")]
    assert of_response(stream, parent)[-1]["type"] == "response.completed"
    successor = [e for e in stream if e["type"] == "response.created"][-1]["response"]["id"]
    texts = [i.content[0].text for i in alice.responses.input_items.list(successor, order="asc").data]
    assert texts == ["One more thing.", "And another."]


def test_steers_that_cannot_be_accepted_fail_with_the_documented_codes(alice: openai.OpenAI, bob: openai.OpenAI,
                                                                       stack, db_access):
    finished = alice.responses.create(model="echo", input="Over HTTP").id
    bobs = bob.responses.create(model="echo", input="Bob's").id
    script = "<|channel|>final<|message|>" + "Slowly now. " * 30 + "<|return|>"
    tight = sdk_client(stack, new_key(new_tenant("steer")))
    with tight.responses.connect() as connection:
        connection.response.create(model="echo", input=script, metadata={"echo_token_delay_ms": "50"})
        events = read_until(connection, lambda es: es[-1]["type"] == "response.output_text.delta")
        running = events[0]["response"]["id"]

        def steer(target: str, steer_input: Any) -> dict[str, Any]:
            connection.response.steer(previous_response_id=target, input=steer_input)
            return read_until(connection, lambda es: es[-1]["type"].startswith("response.steer"))[-1]

        for target in ("resp_does_not_exist", bobs, finished):  # bob's and HTTP-made ones aren't on this socket
            failed = steer(target, "Hi")
            assert failed["type"] == "response.steer.failed" and failed["error"]["code"] == "response_not_found"
            assert failed["steer"] == {"input": "Hi", "previous_response_id": target}
        for bad in ([{"type": "function_call_output", "call_id": "call_1", "output": "x"}],
                    [{"role": "assistant", "content": "I said so"}], [], ""):
            failed = steer(running, bad)
            assert failed["type"] == "response.steer.failed" and failed["error"]["code"] == "invalid_input", bad
            assert failed["steer"]["input"] == bad and "id" not in failed["steer"]
        accepted = [steer(running, f"Steer {n}") for n in range(8)]
        assert all(e["type"] == "response.steer.accepted" for e in accepted)
        too_many = steer(running, "One too many")
        assert too_many["error"]["code"] == "too_many_pending_steers"
        events = read_until(connection, ended(2))
        done = [e for e in events if e["type"] == "response.completed"][0]["response"]["id"]
        assert done == running
        late = steer(running, "Too late")
        assert late["error"]["code"] == "response_already_completed"
    successor = [e for e in events if e["type"] == "response.created"][-1]["response"]["id"]
    texts = [i.content[0].text for i in tight.responses.input_items.list(successor, order="asc").data]
    assert texts == [f"Steer {n}" for n in range(8)]


def test_a_create_the_http_api_would_refuse_is_an_error_event_and_writes_nothing(alice: openai.OpenAI, stack,
                                                                                 db_access):
    from responses_app.models import Response

    before = Response.objects.count()
    reader = sdk_client(stack, new_key("alice", scope="read_only"))
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input="Hi", temperature=5, stream_id="x")
        error = read_until(connection, lambda es: True)[0]
        assert error["type"] == "error" and error["status"] == 400 and error["stream_id"] == "x"
        assert error["error"]["param"] == "temperature" and error["error"]["type"] == "invalid_request_error"
        connection.response.create(model="no-such-model", input="Hi")
        error = read_until(connection, lambda es: True)[0]
        assert error["status"] == 400 and error["error"]["param"] == "model" and "stream_id" not in error
        connection.send({"type": "response.cancel"})  # not a client event of this protocol
        assert read_until(connection, lambda es: True)[0]["error"]["param"] == "type"
        connection.response.create(model="echo", input="Still fine")  # the socket stays usable
        assert read_until(connection, ended())[-1]["type"] == "response.completed"
    with reader.responses.connect() as connection:
        connection.response.create(model="echo", input="Hi")
        error = read_until(connection, lambda es: True)[0]
        assert error["status"] == 403 and error["error"]["code"] == "insufficient_permissions"
    assert Response.objects.count() == before + 1


def test_a_bad_key_answers_the_sdks_first_create_with_a_401_error_event_then_a_close_it_does_not_retry(stack):
    client = openai.OpenAI(base_url=stack.base_url, api_key="sk-not-a-real-key", max_retries=0)
    events = []
    with pytest.raises(ConnectionClosed) as closed:
        with client.responses.connect(on_reconnecting=lambda event: None) as connection:
            time.sleep(0.5)  # a client that sends its first create a moment after connecting
            connection.response.create(model="echo", input="Hi")  # goes through: the socket is open
            for event in connection:
                events.append(event.to_dict())
    assert closed.value.rcvd.code == 3000
    assert [e["type"] for e in events] == ["error"]
    assert events[0]["status"] == 401 and events[0]["error"]["code"] == "invalid_api_key"
    assert "API key" in events[0]["error"]["message"]
    # dispatch_events, the SDK's push-based reading, raises it as an OpenAIError.
    with pytest.raises(openai.OpenAIError, match="invalid_api_key"):
        with client.responses.connect(on_reconnecting=lambda event: None) as connection:
            time.sleep(0.5)
            connection.response.create(model="echo", input="Hi")
            connection.dispatch_events()


def test_a_refused_socket_that_only_listens_gets_its_error_and_close_after_a_wait(stack):
    client = openai.OpenAI(base_url=stack.base_url, api_key="sk-not-a-real-key", max_retries=0)
    with pytest.raises(ConnectionClosed) as closed:
        with client.responses.connect(on_reconnecting=lambda event: None) as connection:
            error = connection.recv().to_dict()
            connection.recv()
    assert closed.value.rcvd.code == 3000
    assert error["status"] == 401 and error["error"]["code"] == "invalid_api_key"


def test_a_bad_session_name_is_refused_at_the_handshake(alice: openai.OpenAI):
    with pytest.raises(ConnectionClosed) as closed:
        with alice.responses.connect(extra_query={"session": "not a valid name!"}) as connection:
            connection.response.create(model="echo", input="Hi")
            error = connection.recv().to_dict()
            connection.recv()
    assert closed.value.rcvd.code == 4400
    assert error["status"] == 400 and error["error"]["param"] == "session"


class CuttableProxy:
    """A TCP proxy in front of Daphne that can drop every connection through it at once,
    as a network failure does (the client sees the socket die without a close frame)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self.lock:
                self.connections += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass

    def cut(self) -> None:
        with self.lock:
            connections, self.connections = self.connections, []
        for connection in connections:
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            connection.close()

    def close(self) -> None:
        self.listener.close()
        self.cut()


def run_through_a_drop(base_url: str, key: str, drop: Any) -> tuple[list[dict[str, Any]], int]:
    """Two responses on one lane of a named session, with ``drop()`` called after the 25th
    event; the SDK reconnects, telling the server what it saw. Returns the events and how
    many times the SDK reconnected."""
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
    session = f"test-{uuid.uuid4().hex}"
    seen: dict[str, int] = {}  # response id -> last sequence number seen
    current = ""
    reconnects = 0

    def on_reconnecting(event: Any) -> dict[str, Any]:
        nonlocal reconnects
        reconnects += 1
        return {"extra_query": {"session": session,
                                "starting_after": [f"{rid}:{number}" for rid, number in seen.items()]}}

    events: list[dict[str, Any]] = []
    with client.responses.connect(extra_query={"session": session}, on_reconnecting=on_reconnecting,
                                  initial_delay=0.5, max_retries=8) as connection:
        connection.response.create(model="echo", input="Please survive a network failure. " * 4,
                                   metadata={"echo_token_delay_ms": "20"}, stream_id="only")
        connection.response.create(model="echo", input="And run after it.", stream_id="only")
        for event in connection:
            data = event.to_dict()
            events.append(data)
            if data["type"] == "response.created":
                current = data["response"]["id"]
            seen[current] = data["sequence_number"]
            if len(events) == 25:
                drop()
            if sum(e["type"] in TERMINAL_EVENTS for e in events) == 2:
                break
    return events, reconnects


def assert_each_response_as_replayed(client: openai.OpenAI, events: list[dict[str, Any]]) -> None:
    """No loss, no duplicate: each response's events are its SSE replay, and nothing else came."""
    ids = [e["response"]["id"] for e in events if e["type"] == "response.created"]
    replays = [sse_replay(client, response_id) for response_id in ids]
    for response_id, replay in zip(ids, replays, strict=True):
        assert [without_lane(e) for e in of_response(events, response_id)] == replay
    assert len(events) == sum(len(replay) for replay in replays)


def test_a_socket_dropped_by_the_network_resumes_without_loss_or_duplicates(alice_key: str,
                                                                            alice: openai.OpenAI, stack):
    proxy = CuttableProxy(stack.port)
    try:
        events, reconnects = run_through_a_drop(f"http://127.0.0.1:{proxy.port}/v1", alice_key, proxy.cut)
    finally:
        proxy.close()
    assert reconnects >= 1
    assert_each_response_as_replayed(alice, events)


def test_a_web_restart_mid_response_is_resumed_on_the_new_process(alice_key: str, alice: openai.OpenAI, stack):
    def restart_web() -> None:
        stack.kill("web", signal.SIGKILL)
        stack.start("web")

    try:
        events, reconnects = run_through_a_drop(stack.base_url, alice_key, restart_web)
    finally:
        stack.ensure_running()
    assert reconnects >= 1
    assert_each_response_as_replayed(alice, events)


def test_a_web_process_stopped_with_sockets_open_ends_every_task_they_started(alice: openai.OpenAI, stack):
    """SIGTERM, as a deployment stops Daphne, while sockets follow running responses on
    named lanes: each socket's lanes and presence renewal end before the process does."""
    log = LOG_DIR / f"web-{stack.port}.log"
    start = log.stat().st_size
    connections = [alice.responses.connect().__enter__() for _ in range(3)]
    try:
        for connection in connections:
            for lane in ("a", "b"):
                connection.response.create(model="echo", input="Long " * 100, stream_id=lane, metadata=SLOW)
            read_until(connection, lambda events: events[-1]["type"] == "response.output_text.delta")
        stack.kill("web", signal.SIGTERM)
    finally:
        for connection in connections:
            connection.close()
        stack.ensure_running()
    with log.open("rb") as written:
        written.seek(start)
        assert b"Task was destroyed" not in written.read()


def test_a_socket_gone_for_good_cancels_its_foreground_responses_and_not_its_background_ones(
        alice: openai.OpenAI):
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input="Long foreground work. " * 60, stream_id="fg",
                                   metadata={"echo_token_delay_ms": "100"})
        connection.response.create(model="echo", input="Background work. " * 3, stream_id="bg", background=True,
                                   metadata={"echo_token_delay_ms": "50"})
        created = read_until(connection, lambda es: sum(e["type"] == "response.created" for e in es) == 2)
    ids = {e["stream_id"]: e["response"]["id"] for e in created if e["type"] == "response.created"}
    assert wait_for_status(alice, ids["fg"], {"cancelled"}, timeout=30).status == "cancelled"
    assert wait_for_status(alice, ids["bg"], {"completed"}, timeout=30).status == "completed"


def test_a_hundred_sockets_each_run_a_response(alice_key: str, stack):
    async def one(client: openai.AsyncOpenAI, n: int) -> list[dict[str, Any]]:
        async with client.responses.connect() as connection:
            await connection.response.create(model="echo", input=f"Socket number {n}")
            events = []
            async for event in connection:
                events.append(event.to_dict())
                if event.type in TERMINAL_EVENTS:
                    return events
        raise AssertionError(f"socket {n} closed early")

    async def run() -> list[list[dict[str, Any]]]:
        client = openai.AsyncOpenAI(base_url=stack.base_url, api_key=alice_key, max_retries=0, timeout=120)
        return await asyncio.gather(*(one(client, n) for n in range(100)))

    results = asyncio.run(run())
    assert len(results) == 100
    for n, events in enumerate(results):
        assert events[-1]["type"] == "response.completed"
        assert_dense(events)
        assert f"Socket number {n}" in events[-1]["response"]["output"][-1]["content"][0]["text"]


def test_a_socket_response_is_an_ordinary_response(alice: openai.OpenAI, bob: openai.OpenAI):
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input="Cancel me over HTTP. " * 20, background=True,
                                   metadata={"echo_token_delay_ms": "50"})
        events = read_until(connection, lambda es: es[-1]["type"] == "response.output_text.delta"
                            or es[-1]["type"] == "response.reasoning_text.delta")
        response_id = events[0]["response"]["id"]
        assert alice.responses.cancel(response_id).status == "cancelled"
        events += read_until(connection, ended())
    assert events[-1]["type"] == "response.incomplete" and events[-1]["response"]["status"] == "cancelled"
    assert events == sse_replay(alice, response_id)
    with pytest.raises(openai.NotFoundError):
        bob.responses.retrieve(response_id)


# --- store=false over the socket (Codex, the Open Responses WebSocket) --------------------------


def test_a_socket_continues_its_last_store_false_response_and_only_that_socket_may(alice: openai.OpenAI):
    with alice.responses.connect() as connection:
        # Codex's prewarm: the context is stored, nothing is generated.
        connection.response.create(model="echo", input=[{"role": "developer", "content": "You are terse."}],
                                   store=False, generate=False)
        prewarm = read_until(connection, ended())
        assert [e["type"] for e in prewarm] == ["response.created", "response.completed"]
        assert prewarm[-1]["response"]["output"] == []
        prewarm_id = prewarm[0]["response"]["id"]

        connection.response.create(model="echo", input=reasoning_and_answer("Think.", "First."), store=False,
                                   previous_response_id=prewarm_id)
        first = read_until(connection, ended())
        assert first[-1]["type"] == "response.completed", first[-1]
        first_id = first[0]["response"]["id"]
        assert first[-1]["response"]["previous_response_id"] == prewarm_id

        # Only the last response is held: the prewarm can no longer be continued.
        connection.response.create(model="echo", input="again", store=False, previous_response_id=prewarm_id)
        [refused] = read_until(connection, lambda events: events[-1]["type"] == "error")
        assert refused["error"]["code"] == "previous_response_not_found"

        connection.response.create(model="echo", input="Second?", store=False, previous_response_id=first_id)
        second = read_until(connection, ended())
        assert second[-1]["type"] == "response.completed"

    # Over HTTP, or on another socket, a store=false response is not there to continue.
    with pytest.raises(openai.NotFoundError):
        alice.responses.create(model="echo", input="Third?", previous_response_id=first_id)
    with alice.responses.connect() as other:
        other.response.create(model="echo", input="Third?", store=False, previous_response_id=first_id)
        [refused] = read_until(other, lambda events: events[-1]["type"] == "error")
        assert refused["error"]["code"] == "previous_response_not_found"


def test_a_failed_continuation_lets_go_of_the_held_response(alice: openai.OpenAI):
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input="Hello", store=False)
        first_id = read_until(connection, ended())[0]["response"]["id"]
        # An output for a call that was never made: the continuation fails...
        connection.response.create(model="echo", store=False, previous_response_id=first_id,
                                   input=[{"type": "function_call_output", "call_id": "call_none", "output": "x"}])
        [failed] = read_until(connection, lambda events: events[-1]["type"] == "error")
        assert failed["status"] == 400
        # ...and the response it continued is no longer held.
        connection.response.create(model="echo", input="Hi", store=False, previous_response_id=first_id)
        [refused] = read_until(connection, lambda events: events[-1]["type"] == "error")
        assert refused["error"]["code"] == "previous_response_not_found"


def test_a_compaction_trigger_over_the_socket_compacts_the_held_store_false_response(alice: openai.OpenAI):
    # Codex over the socket: store=false turns continued by previous_response_id; its inline
    # compaction sends only the trigger, and the next turn continues from the compaction.
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input="My name is Ada.", store=False)
        first = read_until(connection, ended())
        connection.response.create(model="echo", input=[{"type": "compaction_trigger"}], store=False,
                                   previous_response_id=first[0]["response"]["id"])
        compacting = read_until(connection, ended())
        assert compacting[-1]["type"] == "response.completed", compacting[-1]
        [item] = [e["item"] for e in compacting if e["type"] == "response.output_item.done"]
        assert item["type"] == "compaction" and compacting[-1]["response"]["output"] == [item]
        assert any(e["type"] == "response.compaction.compacting" for e in compacting)
        connection.response.create(model="echo", input="And?", store=False,
                                   previous_response_id=compacting[0]["response"]["id"])
        continued = read_until(connection, ended())
    assert continued[-1]["type"] == "response.completed"
    assert continued[-1]["response"]["output"][-1]["content"][0]["text"] == "You said: And?"


def test_a_response_whose_worker_is_killed_goes_on_over_the_same_socket(alice: openai.OpenAI, stack):
    script = reasoning_and_answer("Thinking it over slowly.",
                                  "An answer long enough to be cut by the loss of its worker, token by token.")
    expected = alice.responses.create(model="echo", input=script).output_text
    with alice.responses.connect() as connection:
        connection.response.create(model="echo", input=script, metadata={"echo_token_delay_ms": "100"})
        events = read_until(connection, lambda events: events[-1]["type"] == "response.output_text.delta")
        stack.kill("worker", signal.SIGKILL)
        stack.start("worker")  # its reaper re-queues the response, and the new worker continues it
        events += read_until(connection, ended())
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["output"][-1]["content"][0]["text"] == expected
    assert_dense(events)
    assert events == sse_replay(alice, events[0]["response"]["id"])
