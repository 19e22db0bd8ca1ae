"""Packed event logs: once a response ends, its events are one compressed block, and every
replay of it is byte for byte what a live client saw, from every starting point, also
for readers that were following it live when it ended and was packed."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from tests.helpers import function_call_then_answer, reasoning_and_answer, wait_until

KEEPALIVE = b": keep-alive\n\n"
SLOW = {"echo_token_delay_ms": "4"}
# A token every 60 ms, more than the stack's 50 ms flush: a delta event per token (an item's
# deltas committed together are one event), so readers can start as far in as index * 7.
TOKEN_PER_COMMIT = {"echo_token_delay_ms": "60"}
WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]}}


def frames_of(body: bytes) -> list[bytes]:
    """The SSE frames of a stream, keep-alive comments left out."""
    return [frame + b"\n\n" for frame in body.replace(KEEPALIVE, b"").split(b"\n\n") if frame]


class Api:
    def __init__(self, base_url: str, key: str) -> None:
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60)

    def stream(self, method: str, path: str, **body) -> bytes:
        with self.http.stream(method, path, json=body or None) as response:
            assert response.status_code == 200, response.read()
            return response.read()

    def replay(self, response_id: str, starting_after: int) -> bytes:
        return self.stream("GET", f"/responses/{response_id}?stream=true&starting_after={starting_after}")


@pytest.fixture
def api(stack, alice_key) -> Api:
    return Api(stack.base_url, alice_key)


def response_id_of(frames: list[bytes]) -> str:
    return json.loads(frames[0].partition(b"\ndata: ")[2])["response"]["id"]


def packed(response_id: str) -> bool:
    from responses_app.models import EventLog, ResponseEvent

    return EventLog.objects.filter(response_id=response_id).exists() and not ResponseEvent.objects.filter(
        response_id=response_id).exists()


def cancelled_mid_stream(api: Api, alice) -> list[bytes]:
    """A background response cancelled over HTTP while its creator streams it."""
    body = {"model": "echo", "input": reasoning_and_answer("Let me think. " * 10, "word " * 200), "stream": True,
            "background": True, "metadata": SLOW}
    received = b""
    cancelled = False
    with api.http.stream("POST", "/responses", json=body) as response:
        for chunk in response.iter_raw():
            received += chunk
            if not cancelled and b"event: response.output_item.added" in received:
                alice.responses.cancel(response_id_of(frames_of(received)))
                cancelled = True
    return frames_of(received)


@pytest.mark.parametrize("kind", ["answer", "function call", "cancelled"])
def test_a_packed_replay_is_byte_identical_to_the_live_stream_after_every_sequence_number(
        api, alice, db_access, kind):
    if kind == "answer":
        live = frames_of(api.stream("POST", "/responses", model="echo", stream=True,
                                    input=reasoning_and_answer("Thinking it over.", "The answer is 42.")))
    elif kind == "function call":
        live = frames_of(api.stream("POST", "/responses", model="echo", stream=True, tools=[WEATHER_TOOL],
                                    input=function_call_then_answer("get_weather", '{"city": "Paris"}', "Sunny.")))
        assert b'"type":"function_call"' in b"".join(live)
    else:
        live = cancelled_mid_stream(api, alice)
        assert b'"status":"cancelled"' in live[-1]
    response_id = response_id_of(live)
    wait_until(lambda: packed(response_id))

    for k in range(-1, len(live)):
        assert frames_of(api.replay(response_id, k)) == live[k + 1:], f"starting_after={k}"


def test_readers_following_a_response_as_it_ends_and_is_packed_miss_and_repeat_nothing(api, alice, db_access):
    created = alice.responses.create(model="echo", background=True, metadata=TOKEN_PER_COMMIT,
                                     input=reasoning_and_answer("Hm. " * 20, "token " * 150))
    received: dict[int, bytes] = {}

    def follow(index: int, starting_after: int) -> None:
        received[index] = api.replay(created.id, starting_after)

    # Readers join all along the run, from different points, the last ones just before the end.
    readers = []
    for index in range(16):
        state = alice.responses.retrieve(created.id)
        if state.status == "completed":
            break
        reader = threading.Thread(target=follow, args=(index, index * 7 - 1))
        reader.start()
        readers.append(reader)
        time.sleep(0.08)
    for reader in readers:
        reader.join(timeout=60)
    wait_until(lambda: packed(created.id))
    full = frames_of(api.replay(created.id, -1))
    assert len(readers) >= 4 and len(received) == len(readers)
    for index, body in received.items():
        assert frames_of(body) == full[index * 7:], f"reader {index}"
