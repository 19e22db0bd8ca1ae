"""Hostile and careless input against the live stack (issue: "hold every invariant under
hostile input"): each finding of that report, reproduced. Every refusal is a 4xx in OpenAI's
shape, nothing is half-written, nothing is poisoned for later reads, and one tenant's slow
work does not hold the threads that another tenant's requests need."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import pytest

from tests.conftest import sdk_client
from tests.helpers import assert_openai_error, ended, new_key, new_tenant, read_until, tenant_row_counts, wait_until
from tests.live.webhook_receiver import Receiver

pytestmark = pytest.mark.core

LONE_SURROGATE = "a\ud800b"
NUL = "a\x00b"


@pytest.fixture
def tenant(stack, db_access) -> str:
    return new_tenant("hostile")


@pytest.fixture
def http(stack, tenant) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.base_url, headers={"Authorization": f"Bearer {new_key(tenant)}"},
                      timeout=30) as client:
        yield client


def post_raw(http: httpx.Client, path: str, text: str) -> httpx.Response:
    return http.post(path, content=text.encode(), headers={"Content-Type": "application/json"})


def raw_exchange(port: int, head: bytes, body_chunks: Iterator[bytes] = iter(())) -> tuple[bytes, int]:
    """Send ``head`` then as much of the body as the server reads; (what it answered, body
    bytes sent before the answer arrived)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(head)
        sent = 0
        conn.settimeout(0.2)
        answer = b""
        for chunk in body_chunks:
            try:
                answer += conn.recv(65536)
                break
            except TimeoutError:
                pass
            try:
                conn.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)
        conn.settimeout(10)
        try:
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                data = conn.recv(65536)
                if not data:
                    break
                answer += data
        except (TimeoutError, ConnectionResetError):
            pass
        return answer, sent


def status_and_json(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        chunks = b""
        while (size := int(body.split(b"\r\n", 1)[0], 16)) > 0:
            body = body.split(b"\r\n", 1)[1]
            chunks, body = chunks + body[:size], body[size + 2:]
        body = chunks
    return int(head.split()[1]), json.loads(body)


# --- limits before work ------------------------------------------------------------------------


def test_a_body_over_the_limit_is_a_413_in_openai_shape(http, tenant):
    before = tenant_row_counts(tenant)
    response = post_raw(http, "/responses", json.dumps({"model": "echo", "input": "x" * (20 * 2**20)}))
    error = assert_413(response)
    assert "larger than" in error["message"]
    assert tenant_row_counts(tenant) == before


def assert_413(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == "request_too_large"
    return error


def test_a_declared_10_gb_body_is_refused_before_it_is_read(stack):
    head = (b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 10000000000\r\n\r\n")
    answer, sent = raw_exchange(stack.port, head, iter([b"x" * 65536] * 2000))
    status, body = status_and_json(answer)
    assert status == 413 and body["error"]["code"] == "request_too_large"
    assert sent < 20 * 2**20  # answered long before the 128 MiB the client had to send


def test_an_unauthenticated_body_is_refused_before_it_is_read(stack):
    head = b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 8000000\r\n"
    unknown = b"sk-abcdefghijkl-" + b"x" * 40  # well formed, but no such key: looked up before the body
    for authorization in (b"", b"Authorization: Bearer not-a-key\r\n", b"Authorization: Bearer " + unknown + b"\r\n"):
        answer, sent = raw_exchange(stack.port, head + authorization + b"\r\n", iter([b" " * 65536] * 122))
        status, body = status_and_json(answer)
        assert status == 401 and body["error"]["type"] == "invalid_request_error", body
        assert sent < 8000000


def test_a_large_body_with_a_valid_key_is_read_once_the_key_is_known(stack, tenant):
    body = json.dumps({"model": "echo", "input": "Hi " * 40_000}).encode()  # 120 KB, within the context
    head = (f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {new_key(tenant)}\r\nContent-Length: {len(body)}\r\n"
            f"Expect: 100-continue\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", stack.port), timeout=30) as conn:
        conn.sendall(head)
        assert conn.recv(1024).startswith(b"HTTP/1.1 100 Continue")  # sent once the key was looked up
        conn.sendall(body)
        answer = b""
        while data := conn.recv(65536):
            answer += data
    status, created = status_and_json(answer)
    assert status == 200 and created["status"] == "completed", created


def test_a_chunked_body_that_grows_past_the_limit_is_a_413(stack, tenant):
    def chunks() -> Iterator[bytes]:
        piece = b"x" * 2**20
        for _ in range(40):
            yield b"%x\r\n%s\r\n" % (len(piece), piece)
        yield b"0\r\n\r\n"

    head = (f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {new_key(tenant)}\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    answer, _ = raw_exchange(stack.port, head, chunks())
    status, body = status_and_json(answer)
    assert status == 413 and body["error"]["code"] == "request_too_large"


@pytest.mark.parametrize("request_head", [
    b"NOT A REQUEST LINE\r\n\r\n",
    b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"x" * 20_000 + b"\r\n\r\n",  # a line over 16 KiB
    b"GET /v1/models HTTP/1.1\r\n" + b"".join(b"X-%d: %s\r\n" % (n, b"z" * 8_000) for n in range(3)) + b"\r\n",
    b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: twelve\r\n\r\n",
])
def test_what_is_not_http_is_a_400_in_openai_shape(stack, request_head):
    answer, _ = raw_exchange(stack.port, request_head)
    status, body = status_and_json(answer)
    assert status == 400 and body["error"]["code"] == "invalid_http"


@pytest.mark.parametrize("depth", [50_000, 200])
def test_json_nested_too_deep_is_a_400(http, tenant, depth):
    before = tenant_row_counts(tenant)
    text = '{"model": "echo", "input": "hi", "metadata": ' + "[" * depth + "]" * depth + "}"
    error = assert_openai_error(post_raw(http, "/responses", text), 400, error_param(depth))
    assert error["code"] == "nesting_too_deep"
    assert tenant_row_counts(tenant) == before


def error_param(depth: int) -> str | None:
    # Past the parser's own recursion limit the path is unknown; below it, it is named.
    return None if depth > 1000 else "metadata" + "[0]" * 63


@pytest.mark.parametrize("bad", [LONE_SURROGATE, NUL])
@pytest.mark.parametrize("body, param", [
    ({"input": "{bad}"}, "input"),
    ({"instructions": "{bad}"}, "instructions"),
    ({"input": [{"type": "message", "role": "user", "content": "ok", "id": "msg_{bad}"}]}, "input[0].id"),
    ({"metadata": {"{bad}": "v"}}, "metadata.{bad}"),
    ({"tools": [{"type": "function", "name": "f{bad}", "parameters": {}}]}, "tools[0].name"),
])
def test_text_that_cannot_be_stored_is_a_400_naming_it(http, tenant, bad, body, param):
    before = tenant_row_counts(tenant)
    text = json.dumps({"model": "echo", **body}).replace("{bad}", json.dumps(bad)[1:-1])
    error = assert_openai_error(post_raw(http, "/responses", text), 400, param.replace("{bad}", "a\ufffdb"))
    assert error["code"] == "invalid_text"
    assert tenant_row_counts(tenant) == before


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e400", "-2.5e999"])
def test_numbers_that_are_not_json_are_a_400(http, tenant, constant):
    before = tenant_row_counts(tenant)
    tool = {"type": "function", "name": "f", "parameters": {"type": "object", "maximum": "CONSTANT"}}
    text = json.dumps({"model": "echo", "input": "Hi", "tools": [tool]}).replace('"CONSTANT"', constant)
    assert assert_openai_error(post_raw(http, "/responses", text), 400)["code"] == "invalid_json"
    assert tenant_row_counts(tenant) == before


def test_an_input_item_id_longer_than_its_column_is_a_400(http, tenant):
    item = {"type": "message", "role": "user", "content": "hi", "id": "msg_" + "x" * 61}
    response = http.post("/responses", json={"model": "echo", "input": [item]})
    assert assert_openai_error(response, 400, "input[0].id")["code"] == "string_above_max_length"
    item["id"] = "msg_" + "x" * 60
    assert http.post("/responses", json={"model": "echo", "input": [item]}).status_code == 200


@pytest.mark.parametrize("path", ["/responses/resp_%00", "/conversations/conv_%00/items",
                                  "/containers?after=%00", "/webhook_endpoints?after=%00",
                                  "/scheduled_responses?after=%00", "/conversations/conv_1/items?after=%00"])
def test_a_nul_in_the_url_is_a_400(http, path):
    assert assert_openai_error(http.get(path), 400)["code"] == "invalid_url"


def test_a_query_with_non_ascii_text_is_read_as_utf8(http):
    page = http.get("/containers", params={"name": "café ☕"})
    assert page.status_code == 200 and page.json()["data"] == []


def test_starting_after_beyond_any_sequence_number_is_a_400_on_a_running_response(http):
    running = http.post("/responses", json={"model": "echo", "input": "Slow " * 40, "background": True,
                                            "metadata": {"echo_token_delay_ms": "50"}}).json()
    started = time.monotonic()
    response = http.get(f"/responses/{running['id']}", params={"stream": "true", "starting_after": 2**63})
    assert assert_openai_error(response, 400, "starting_after")
    assert time.monotonic() - started < 5
    http.post(f"/responses/{running['id']}/cancel")


def test_a_multipart_upload_with_too_many_parts_or_a_broken_body_is_a_400_in_openai_shape(http):
    container = http.post("/containers", json={"name": "parts"}).json()["id"]
    files = [("file", (f"f{n}.txt", b"x")) for n in range(150)]
    response = http.post(f"/containers/{container}/files", files=files)
    assert assert_openai_error(response, 400)["code"] == "invalid_body"
    broken = http.post(f"/containers/{container}/files", content=b"--nope\r\nnot a part",
                       headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert broken.status_code == 400 and set(broken.json()["error"]) == {"message", "type", "param", "code"}
    ok = http.post(f"/containers/{container}/files", files={"file": ("ok.txt", b"fine")})
    assert ok.status_code == 200 and ok.json()["path"] == "/mnt/data/ok.txt"


# --- objects never poisoned --------------------------------------------------------------------


def test_an_assistant_message_with_string_content_is_stored_as_it_is_served(http):
    conversation = http.post("/conversations", json={}).json()["id"]
    added = http.post(f"/conversations/{conversation}/items",
                      json={"items": [{"type": "message", "role": "assistant", "content": "hi"}]})
    assert added.status_code == 200, added.text
    [item] = added.json()["data"]
    assert item["content"] == [{"type": "output_text", "text": "hi", "annotations": [], "logprobs": []}]
    listed = http.get(f"/conversations/{conversation}/items")
    assert listed.status_code == 200 and listed.json()["data"][0]["id"] == item["id"]
    created = http.post("/responses", json={"model": "echo", "input": "Go on", "conversation": conversation})
    assert created.status_code == 200 and created.json()["status"] == "completed"


def test_a_surrogate_in_a_conversation_item_is_refused_and_the_conversation_stays_usable(http):
    conversation = http.post("/conversations", json={}).json()["id"]
    text = json.dumps({"items": [{"type": "message", "role": "user", "content": "x"}]}).replace(
        '"x"', '"\\ud800"')
    refused = post_raw(http, f"/conversations/{conversation}/items", text)
    assert assert_openai_error(refused, 400, "items[0].content")["code"] == "invalid_text"
    created = http.post("/responses", json={"model": "echo", "input": "Hi", "conversation": conversation})
    assert created.status_code == 200 and created.json()["status"] == "completed"


@pytest.mark.parametrize("schedule, param", [
    ({"every_seconds": 10**20}, "schedule.every_seconds"),
    ({"every_seconds": 2**31}, "schedule.every_seconds"),
    ({"cron": "* * * * *", "timezone": "E" * 5000}, "schedule.timezone"),
    ({"cron": "* * * * *", "timezone": "../../../etc/passwd"}, "schedule.timezone"),
    ({"at": "9999-12-31T23:59:59-23:59"}, "schedule.at"),
])
def test_a_schedule_out_of_range_is_a_400_and_the_list_stays_readable(http, schedule, param):
    body = {"name": "hostile", "schedule": schedule, "request": {"model": "echo", "input": "Hi"}}
    assert_openai_error(http.post("/scheduled_responses", json=body), 400, param)
    assert http.get("/scheduled_responses").status_code == 200


def test_a_schedule_stored_past_the_year_9999_is_repaired_by_the_migration(http):
    from importlib import import_module

    from django.apps import apps
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("SQLite keeps the time as given and reads it back")
    body = {"name": "far", "schedule": {"at": "2999-01-01T00:00:00Z"}, "request": {"model": "echo", "input": "Hi"}}
    schedule = http.post("/scheduled_responses", json=body).json()["id"]
    with connection.cursor() as cursor:  # what an unchecked create stored before
        cursor.execute("UPDATE django_celery_beat_clockedschedule SET clocked_time = '10000-01-01 00:20:00+00' "
                       "WHERE id IN (SELECT clocked_id FROM django_celery_beat_periodictask WHERE id = "
                       "(SELECT periodic_task_id FROM responses_app_scheduledresponse WHERE id = %s))", [schedule])
    assert http.get("/scheduled_responses").status_code == 500  # poisoned
    repair = import_module("responses_app.migrations.0007_repair_unservable_items").repair_schedules
    with connection.schema_editor() as editor:
        repair(apps, editor)
    assert http.get("/scheduled_responses").status_code == 200
    assert http.get(f"/scheduled_responses/{schedule}").json()["enabled"] is False
    assert http.delete(f"/scheduled_responses/{schedule}").status_code == 200


def test_stored_items_that_could_not_be_served_are_repaired_by_the_migration():
    from importlib import import_module

    repaired = import_module("responses_app.migrations.0007_repair_unservable_items").repaired
    stored = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": "hi \ud800 there"}]}
    assert repaired(stored)["content"] == [
        {"type": "output_text", "text": "hi \ufffd there", "annotations": [], "logprobs": []}]
    from responses_app.wire.objects import conversation_item_object, item_object

    assert item_object(repaired(stored)) and conversation_item_object(repaired(stored), [])


# --- caps per tenant ---------------------------------------------------------------------------


def test_each_tenant_has_default_caps_on_schedules_and_webhook_endpoints(http, tenant):
    from django.conf import settings

    from responses_app.models import ScheduledResponse, Tenant, WebhookEndpoint

    owner = Tenant.objects.get(name=tenant)
    ScheduledResponse.objects.bulk_create(
        ScheduledResponse(tenant=owner, id=f"sched_{uuid.uuid4().hex}", name="n", schedule={"every_seconds": 60},
                          request={"model": "echo", "input": "x"}, enabled=False)
        for _ in range(settings.TENANT_MAX_SCHEDULES))
    body = {"name": "one more", "schedule": {"every_seconds": 60}, "request": {"model": "echo", "input": "Hi"}}
    assert assert_openai_error(http.post("/scheduled_responses", json=body), 400)["code"] == "object_limit_reached"
    WebhookEndpoint.objects.bulk_create(
        WebhookEndpoint(tenant=owner, name="n", url="https://example.com/hook", event_types=["response.completed"],
                        signing_secret="whsec_x") for _ in range(settings.TENANT_MAX_WEBHOOK_ENDPOINTS))
    # A body that is valid (a public address: no name to resolve here), so that the cap is what refuses it.
    body = {"name": "one more", "url": "https://8.8.8.8/hook", "event_types": ["response.completed"]}
    assert assert_openai_error(http.post("/webhook_endpoints", json=body), 400)["code"] == "object_limit_reached"


def test_foreground_responses_in_progress_are_capped_per_tenant(http, tenant):
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from responses_app.models import Response, Tenant

    owner = Tenant.objects.get(name=tenant)
    # Rows that look in progress to the cap, under a lease the reaper leaves alone.
    Response.objects.bulk_create(
        Response(tenant=owner, model="echo", status="in_progress", background=False, request={},
                 lease_expires_at=timezone.now() + timedelta(hours=1))
        for _ in range(settings.TENANT_MAX_CONCURRENT_FOREGROUND))
    try:
        response = http.post("/responses", json={"model": "echo", "input": "Hi"})
        assert response.status_code == 429 and response.json()["error"]["code"] == "concurrency_limit_exceeded"
        assert response.headers["retry-after"]
        background = http.post("/responses", json={"model": "echo", "input": "Hi", "background": True})
        assert background.status_code == 200  # background work has its own limit
    finally:
        Response.objects.filter(tenant=owner, request={}).delete()


# --- the operator console ----------------------------------------------------------------------


def test_the_console_may_not_be_framed(stack):
    page = httpx.get(stack.base_url.removesuffix("/v1") + "/admin/login/", timeout=30)
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


# --- one tenant's slow work does not hold another's requests ----------------------------------


def models_latency(stack, key: str) -> float:
    started = time.monotonic()
    assert httpx.get(f"{stack.base_url}/models", headers={"Authorization": f"Bearer {key}"},
                     timeout=30).status_code == 200
    return time.monotonic() - started


def test_webhook_tests_to_a_receiver_that_never_answers_hold_no_shared_thread(stack, http, alice_key):
    receiver = Receiver(delay_s=60)
    try:
        endpoint = http.post("/webhook_endpoints", json={
            "name": "slow", "url": receiver.url, "event_types": ["response.completed"]}).json()["id"]
        with ThreadPoolExecutor(12) as pool:
            tests = [pool.submit(http.post, f"/webhook_endpoints/{endpoint}/test",
                                 json={"event_type": "response.completed"}) for _ in range(12)]
            # All 12 held open at once: each is held up to the delivery timeout (8 s here),
            # longer than a loaded machine takes to send the 12.
            wait_until(lambda: receiver.max_open >= 12, timeout=20)
            assert models_latency(stack, alice_key) < 2
            answers = [test.result() for test in tests]
        # Each test ends at the delivery timeout, as unreachable (400), never as a 500.
        assert {answer.status_code for answer in answers} == {400}
    finally:
        receiver.close()


def test_uploads_waiting_for_a_running_code_call_hold_no_shared_thread(stack, http, alice_key, db_access):
    from tools_app.container_lock import container_lease

    container = http.post("/containers", json={"name": "busy"}).json()["id"]
    with ThreadPoolExecutor(12) as pool:
        # Held here as a code interpreter call on any node holds it while its code runs.
        with container_lease(container):
            uploads = [pool.submit(http.post, f"/containers/{container}/files",
                                   files={"file": (f"f{n}.txt", b"data")}) for n in range(12)]
            time.sleep(1)
            assert models_latency(stack, alice_key) < 2
            assert not any(upload.done() for upload in uploads)  # they wait for the call
        assert {upload.result().status_code for upload in uploads} == {200}
    assert len(http.get(f"/containers/{container}/files", params={"limit": 100}).json()["data"]) == 12


# --- the Responses WebSocket -------------------------------------------------------------------


def test_a_read_only_or_revoked_key_cannot_steer(stack, db_access, tenant):
    from responses_app.models import ApiKey, Response
    from responses_app.tenancy.api_keys import revoke_api_key

    session = f"steer-{uuid.uuid4().hex[:8]}"
    writer_key = new_key(tenant)
    writer = sdk_client(stack, writer_key)
    reader = sdk_client(stack, new_key(tenant, scope="read_only"))
    script = "<|channel|>final<|message|>" + "Slowly now. " * 40 + "<|return|>"
    with writer.responses.connect(extra_query={"session": session}) as connection:
        connection.response.create(model="echo", input=script, metadata={"echo_token_delay_ms": "50"})
        running = read_until(connection, lambda es: es[-1]["type"] == "response.output_text.delta")[0]["response"]["id"]
        with reader.responses.connect(extra_query={"session": session}) as intruder:
            intruder.response.steer(previous_response_id=running, input="Stop and talk about tea.")
            error = read_until(intruder, lambda es: es[-1]["type"] in ("error", "response.steer.accepted"))[-1]
            assert error["type"] == "error" and error["status"] == 403
            assert error["error"]["code"] == "insufficient_permissions"
        revoke_api_key(ApiKey.objects.get(prefix=writer_key.split("-")[1]))
        connection.response.steer(previous_response_id=running, input="Stop now.")
        error = read_until(connection, lambda es: es[-1]["type"] in ("error", "response.steer.accepted"))[-1]
        assert error["type"] == "error" and error["status"] == 401
        events = read_until(connection, ended())
    assert events[-1]["type"] == "response.completed"
    assert Response.objects.filter(previous_response_id=running).count() == 0  # no successor


def test_a_second_socket_of_the_session_closing_does_not_cancel_what_the_first_still_reads(stack, tenant):
    client = sdk_client(stack, new_key(tenant))
    session = f"shared-{uuid.uuid4().hex[:8]}"
    script = "<|channel|>final<|message|>" + "Long foreground work. " * 40 + "<|return|>"
    with client.responses.connect(extra_query={"session": session}) as first:
        first.response.create(model="echo", input=script, metadata={"echo_token_delay_ms": "100"})
        created = read_until(first, lambda es: es[-1]["type"] == "response.output_text.delta")[0]["response"]["id"]
        with client.responses.connect(extra_query={"session": session}) as second:
            read_until(second, lambda es: es[-1]["type"] == "response.output_text.delta")  # it follows too
        time.sleep(6)  # twice the stack's WS_RESUME_GRACE_S
        assert client.responses.retrieve(created).status == "in_progress"
        events = read_until(first, ended())
    assert events[-1]["type"] == "response.completed" and events[-1]["response"]["id"] == created


def test_socket_messages_that_cannot_be_stored_or_nest_too_deep_are_400_error_events(alice: openai.OpenAI):
    with alice.responses.connect() as connection:
        connection._connection.send('{"type": "response.create", "model": "echo", "input": "a\\ud800b"}')
        error = read_until(connection, lambda es: True)[0]
        assert error["status"] == 400 and error["error"]["code"] == "invalid_text"
        assert error["error"]["param"] == "input"
        connection._connection.send('{"type": "response.create", "metadata": ' + "[" * 3000 + "]" * 3000 + "}")
        error = read_until(connection, lambda es: True)[0]
        assert error["status"] == 400 and error["error"]["code"] == "nesting_too_deep"
        connection.response.create(model="echo", input="Still fine")  # the socket stays usable
        assert read_until(connection, ended())[-1]["type"] == "response.completed"


# --- code run by the model ---------------------------------------------------------------------


def test_files_the_api_cannot_name_are_not_recorded(tmp_path):
    from tools_app.sandbox.files import MAX_PATH_LENGTH, snapshot

    (tmp_path / "ok.txt").write_text("fine")
    (tmp_path.joinpath(*["d" * 200] * 6)).mkdir(parents=True)
    tmp_path.joinpath(*["d" * 200] * 6, "deep.txt").write_text("too long a path")
    with open(bytes(tmp_path) + b"/\xff\xfe.bin", "wb") as file:  # not UTF-8
        file.write(b"x")
    listed = snapshot(tmp_path)
    assert list(listed) == ["ok.txt"]
    assert all(len(path) <= MAX_PATH_LENGTH for path in listed)


