"""API keys, tenant isolation and store=false (DESIGN invariants 7 and 8).

Raw httpx requests check status, error shape and headers exactly; the openai SDK checks
that clients see the exception classes they are built against.
"""

from __future__ import annotations

import base64
import re
import secrets
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from django.test import override_settings
from django.utils import timezone

from responses_app.services.recovery import purge_unstored_responses
from tests.conftest import http_client, sdk_client
from tests.helpers import ERROR_KEYS, events_of, wait_for_status

pytestmark = pytest.mark.core

NEVER_EXISTED = "resp_" + "0123456789abcdef" * 3
# A response that runs for a few seconds: the echo answer repeats the input, one token per 20 ms.
SLOW_INPUT = "Count these words slowly please. " * 20
SLOW_METADATA = {"echo_token_delay_ms": "20"}


def assert_openai_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == ERROR_KEYS
    assert isinstance(body["error"]["message"], str) and body["error"]["message"].strip()
    assert isinstance(body["error"]["type"], str) and body["error"]["type"]
    return body["error"]


def http(stack, key: str | None = None, authorization: str | None = None) -> httpx.Client:
    if authorization is not None:
        return http_client(stack, headers={"Authorization": authorization})
    return http_client(stack, key)


def response_counts(tenant_name: str) -> dict[str, int]:
    from django.db.models import Count, Sum

    from responses_app.models import InputItem, Response

    # Events in either form of the event log, in one statement (one snapshot): a response
    # that ends is packed, its rows into one block, in one transaction (and never both).
    events = Response.objects.filter(tenant__name=tenant_name).aggregate(
        rows=Count("events"), packed=Sum("event_log__event_count"))
    return {
        "responses": Response.objects.filter(tenant__name=tenant_name).count(),
        "input_items": InputItem.objects.filter(response__tenant__name=tenant_name).count(),
        "events": events["rows"] + (events["packed"] or 0),
    }


# --- authentication -----------------------------------------------------------------------


@pytest.fixture
def alice_response_id(stack, alice_key) -> str:
    """A finished, stored response of alice's: a real target for unauthenticated requests."""
    response = sdk_client(stack, alice_key).responses.create(model="echo", input="a stored answer")
    assert response.status == "completed"
    return response.id


@pytest.fixture
def revoked_key(stack) -> str:
    """A key of alice's tenant that worked, then was revoked."""
    from responses_app.tenancy.api_keys import create_api_key, revoke_api_key

    row, key = create_api_key("alice", "revoked in a test")
    with http(stack, key) as client:
        assert client.get("/models").status_code == 200
    revoke_api_key(row)
    return key


def unknown_key() -> str:
    prefix = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(12))
    return f"sk-{prefix}-{secrets.token_urlsafe(32)}"


def with_wrong_secret(key: str) -> str:
    prefix = re.match(r"^(sk-[a-z0-9]{12}-)", key).group(1)
    return prefix + secrets.token_urlsafe(32)


BAD_AUTHORIZATIONS = {
    "missing-header": lambda alice_key, revoked_key: None,
    "empty-header": lambda alice_key, revoked_key: "",
    "basic-scheme": lambda alice_key, revoked_key: "Basic " + base64.b64encode(f"{alice_key}:".encode()).decode(),
    "token-scheme-with-a-valid-key": lambda alice_key, revoked_key: f"Token {alice_key}",
    "bare-key-without-scheme": lambda alice_key, revoked_key: alice_key,
    "bearer-without-key": lambda alice_key, revoked_key: "Bearer",
    "malformed-key": lambda alice_key, revoked_key: "Bearer not-an-api-key",
    "uppercase-prefix": lambda alice_key, revoked_key: "Bearer sk-ABCDEFGHIJKL-" + "x" * 40,
    "short-secret": lambda alice_key, revoked_key: "Bearer " + alice_key[:20],
    "well-formed-unknown-key": lambda alice_key, revoked_key: f"Bearer {unknown_key()}",
    "right-prefix-wrong-secret": lambda alice_key, revoked_key: f"Bearer {with_wrong_secret(alice_key)}",
    "revoked-key": lambda alice_key, revoked_key: f"Bearer {revoked_key}",
}

ENDPOINTS = {
    "create": ("POST", "/responses", {"model": "echo", "input": "Hello"}),
    "retrieve": ("GET", "/responses/{id}", None),
    "retrieve-stream": ("GET", "/responses/{id}?stream=true", None),
    "cancel": ("POST", "/responses/{id}/cancel", None),
    "delete": ("DELETE", "/responses/{id}", None),
    "input-items": ("GET", "/responses/{id}/input_items", None),
    "models": ("GET", "/models", None),
    "model": ("GET", "/models/echo", None),
}


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
@pytest.mark.parametrize("case", list(BAD_AUTHORIZATIONS))
def test_a_request_without_a_valid_key_is_401_in_openai_shape_and_touches_nothing(
        stack, db_access, alice_key, revoked_key, alice_response_id, case, endpoint):
    from responses_app.models import Response

    authorization = BAD_AUTHORIZATIONS[case](alice_key, revoked_key)
    method, path, json_body = ENDPOINTS[endpoint]
    target = Response.objects.filter(pk=alice_response_id)
    before, started = target_state(alice_response_id), timezone.now()
    assert before["status"] == "completed" and before["inputs"] == 1 and before["events"] > 3

    with http(stack, authorization=authorization) as client:
        response = client.request(method, path.format(id=alice_response_id), json=json_body)

    error = assert_openai_error(response, 401)
    assert error["param"] is None
    # Nothing created for the key's tenant, and the response it named is as it was (its
    # status, its cancel flag, its items and events).
    assert not Response.objects.filter(tenant__name="alice", created_at__gte=started).exists()
    assert target_state(alice_response_id) == before and target.get().cancel_requested is False


def target_state(response_id: str) -> dict[str, Any]:
    """The response's status, cancel flag, input items and events (rows or packed), read in
    one statement: a finished response may be packed meanwhile, which moves its events."""
    from django.db.models import Count, IntegerField, OuterRef, Subquery, Value
    from django.db.models.functions import Coalesce

    from responses_app.models import EventLog, InputItem, Response, ResponseEvent

    def counted(rows: Any) -> Subquery:
        return Subquery(rows.filter(response_id=OuterRef("pk")).values("response_id").annotate(n=Count("*"))
                        .values("n"), output_field=IntegerField())

    packed = Subquery(EventLog.objects.filter(response_id=OuterRef("pk")).values("event_count"))
    row = Response.objects.filter(pk=response_id).annotate(
        inputs=Coalesce(counted(InputItem.objects), Value(0)),
        event_rows=Coalesce(counted(ResponseEvent.objects), Value(0)), packed=Coalesce(packed, Value(0)),
    ).values("status", "cancel_requested", "inputs", "event_rows", "packed").get()
    return {**row, "events": row.pop("event_rows") + row.pop("packed")}


def test_a_revoked_key_says_so_and_an_unknown_key_says_incorrect(stack, revoked_key):
    with http(stack, revoked_key) as client:
        revoked = assert_openai_error(client.get("/models"), 401)
    with http(stack, unknown_key()) as client:
        unknown = assert_openai_error(client.get("/models"), 401)
    assert "revoked" in revoked["message"]
    assert "Incorrect API key" in unknown["message"]
    assert revoked["code"] == unknown["code"] == "invalid_api_key"


def test_the_sdk_raises_authentication_error_for_a_bad_key(stack, alice_key, revoked_key, alice_response_id):
    for key in (unknown_key(), with_wrong_secret(alice_key), revoked_key):
        client = sdk_client(stack, key)
        with pytest.raises(openai.AuthenticationError) as raised:
            client.responses.create(model="echo", input="Hello")
        assert raised.value.status_code == 401
        assert raised.value.code == "invalid_api_key"
        with pytest.raises(openai.AuthenticationError):
            client.responses.retrieve(alice_response_id)
        with pytest.raises(openai.AuthenticationError):
            client.models.list()


def test_a_valid_key_is_accepted_with_any_case_of_bearer(stack, alice_key, alice_response_id):
    for scheme in ("Bearer", "bearer", "BEARER"):
        with http(stack, authorization=f"{scheme} {alice_key}") as client:
            assert client.get(f"/responses/{alice_response_id}").status_code == 200


# --- tenant isolation ------------------------------------------------------------------------


@pytest.fixture
def alice_running(alice) -> Iterator[Any]:
    """A background response of alice's that is still generating for a few seconds."""
    response = alice.responses.create(model="echo", input=SLOW_INPUT, background=True, metadata=SLOW_METADATA)
    yield response
    try:
        alice.responses.cancel(response.id)
    except openai.APIStatusError:
        pass


def _bob_attempts_through_the_sdk(bob: openai.OpenAI, response_id: str) -> dict[str, Any]:
    return {
        "retrieve": lambda: bob.responses.retrieve(response_id),
        "retrieve-stream": lambda: bob.responses.retrieve(response_id, stream=True),
        "retrieve-stream-resume": lambda: bob.responses.retrieve(response_id, stream=True, starting_after=0),
        "cancel": lambda: bob.responses.cancel(response_id),
        "delete": lambda: bob.responses.delete(response_id),
        "input-items": lambda: bob.responses.input_items.list(response_id),
        "continue": lambda: bob.responses.create(model="echo", input="And now?", previous_response_id=response_id),
    }


RAW_ATTEMPTS = {
    "retrieve": ("GET", "/responses/{id}", None),
    "retrieve-stream": ("GET", "/responses/{id}?stream=true", None),
    "retrieve-stream-resume": ("GET", "/responses/{id}?stream=true&starting_after=0", None),
    "cancel": ("POST", "/responses/{id}/cancel", None),
    "delete": ("DELETE", "/responses/{id}", None),
    "input-items": ("GET", "/responses/{id}/input_items?limit=5&order=asc", None),
    "continue": ("POST", "/responses", {"model": "echo", "input": "And now?", "previous_response_id": "{id}"}),
    "continue-streaming": ("POST", "/responses", {"model": "echo", "input": "And now?", "stream": True,
                                                  "previous_response_id": "{id}"}),
}


def raw_attempt(client: httpx.Client, name: str, response_id: str) -> httpx.Response:
    method, path, json_body = RAW_ATTEMPTS[name]
    if json_body is not None:
        json_body = {k: (response_id if v == "{id}" else v) for k, v in json_body.items()}
    return client.request(method, path.format(id=response_id), json=json_body)


def without_id(response: httpx.Response, response_id: str) -> tuple[int, str, str]:
    return response.status_code, response.headers["content-type"], response.text.replace(response_id, "<id>")


def test_another_tenants_running_response_is_404_everywhere_through_the_sdk_and_stays_untouched(
        alice, bob, alice_running, db_access):
    from responses_app.models import Response

    bob_before = response_counts("bob")
    for name, attempt in _bob_attempts_through_the_sdk(bob, alice_running.id).items():
        with pytest.raises(openai.NotFoundError) as raised:
            attempt()
        assert raised.value.status_code == 404, name
        assert alice_running.id in raised.value.message, name

    row = Response.objects.get(pk=alice_running.id)
    assert row.status in ("queued", "in_progress"), "the response should still be running during bob's attempts"
    assert row.cancel_requested is False
    assert response_counts("bob") == bob_before
    finished = wait_for_status(alice, alice_running.id, {"completed", "failed", "incomplete", "cancelled"})
    assert finished.status == "completed"
    assert "Count these words slowly please." in finished.output_text
    assert [item.content[0].text for item in alice.responses.input_items.list(alice_running.id)] == [SLOW_INPUT]


def test_another_tenants_id_is_indistinguishable_from_one_that_never_existed(
        stack, alice, bob_key, alice_running, db_access):
    from responses_app.models import Response

    with http(stack, bob_key) as bob_http:
        for name in RAW_ATTEMPTS:
            foreign = raw_attempt(bob_http, name, alice_running.id)
            missing = raw_attempt(bob_http, name, NEVER_EXISTED)
            error = assert_openai_error(foreign, 404)
            assert error["type"] == "invalid_request_error"
            assert without_id(foreign, alice_running.id) == without_id(missing, NEVER_EXISTED), name

    row = Response.objects.get(pk=alice_running.id)
    assert row.cancel_requested is False and row.status != "cancelled"
    finished = wait_for_status(alice, alice_running.id, {"completed", "failed", "incomplete", "cancelled"})
    assert finished.status == "completed" and "Count these words slowly please." in finished.output_text


def test_another_tenants_finished_response_is_404_even_where_the_owner_would_get_400(
        stack, alice, alice_key, bob_key):
    # Alice's own requests below are 400s (cursor past the end); bob's must be the plain 404
    # of a missing id, or the difference would tell him that the id exists.
    response = alice.responses.create(model="echo", input="finished")
    beyond = f"/responses/{response.id}?stream=true&starting_after=100000"
    with http(stack, alice_key) as alice_http:
        assert_openai_error(alice_http.get(beyond), 400)
        assert alice_http.post(f"/responses/{response.id}/cancel").status_code == 400
    with http(stack, bob_key) as bob_http:
        for path in (beyond, f"/responses/{response.id}/cancel"):
            method = "POST" if path.endswith("cancel") else "GET"
            foreign = bob_http.request(method, path)
            missing = bob_http.request(method, path.replace(response.id, NEVER_EXISTED))
            assert_openai_error(foreign, 404)
            assert without_id(foreign, response.id) == without_id(missing, NEVER_EXISTED)
    assert alice.responses.retrieve(response.id).status == "completed"


def test_a_tenant_cannot_continue_from_another_tenants_finished_response(alice, bob, db_access):
    response = alice.responses.create(model="echo", input="my secret is 1234")
    bob_before = response_counts("bob")
    with pytest.raises(openai.NotFoundError) as raised:
        bob.responses.create(model="echo", input="what was the secret?", previous_response_id=response.id)
    assert raised.value.param == "previous_response_id"
    assert response_counts("bob") == bob_before
    # Alice herself can.
    follow_up = alice.responses.create(model="echo", input="go on", previous_response_id=response.id)
    assert follow_up.status == "completed"


def test_each_tenant_sees_only_its_own_input_items(alice, bob):
    alices = alice.responses.create(model="echo", input="alice's words")
    bobs = bob.responses.create(model="echo", input="bob's words")
    alice_items = alice.responses.input_items.list(alices.id).data
    bob_items = bob.responses.input_items.list(bobs.id).data
    assert alice_items[0].content[0].text == "alice's words"
    assert bob_items[0].content[0].text == "bob's words"
    with pytest.raises(openai.NotFoundError):
        bob.responses.input_items.list(alices.id)
    with pytest.raises(openai.NotFoundError):
        alice.responses.input_items.list(bobs.id)


# --- store=false ---------------------------------------------------------------------------


def _assert_not_retrievable(client: openai.OpenAI, response_id: str) -> None:
    for attempt in (
        lambda: client.responses.retrieve(response_id),
        lambda: client.responses.retrieve(response_id, stream=True),
        lambda: client.responses.input_items.list(response_id),
        lambda: client.responses.cancel(response_id),
        lambda: client.responses.delete(response_id),
    ):
        with pytest.raises(openai.NotFoundError):
            attempt()


def test_an_unstored_response_completes_and_streams_but_is_never_retrievable_and_is_purged(
        stack, alice, alice_key, db_access):
    from responses_app.models import InputItem, OutputItem, Response, ResponseEvent

    plain = alice.responses.create(model="echo", input="do not keep this", store=False)
    assert Response.objects.filter(pk=plain.id, store=False).exists()  # written, until the purge
    assert plain.status == "completed"
    assert plain.store is False
    assert "do not keep this" in plain.output_text

    events = events_of(alice.responses.create(model="echo", input="nor this", store=False, stream=True))
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    streamed = events[-1]["response"]
    assert streamed["store"] is False and "nor this" in "".join(
        part["text"] for item in streamed["output"] if item["type"] == "message" for part in item["content"])

    kept = alice.responses.create(model="echo", input="keep this one")
    unstored = [plain.id, streamed["id"]]
    for response_id in unstored:
        _assert_not_retrievable(alice, response_id)
        with pytest.raises(openai.NotFoundError) as raised:
            alice.responses.create(model="echo", input="continue", previous_response_id=response_id)
        assert raised.value.param == "previous_response_id"
        # To its own tenant too, an unstored id is just a missing id.
        with http(stack, alice_key) as alice_http:
            for name in RAW_ATTEMPTS:
                assert without_id(raw_attempt(alice_http, name, response_id), response_id) == without_id(
                    raw_attempt(alice_http, name, NEVER_EXISTED), NEVER_EXISTED), name

    # Beat's purge, run here, with the live stack's retention (UNSTORED_RETENTION_S=2).
    time.sleep(2)
    with override_settings(UNSTORED_RETENTION_S=2):
        purge_unstored_responses()  # a live stack's beat, when one runs beside, may have purged them first
    assert not Response.objects.filter(pk__in=unstored).exists()
    assert not InputItem.objects.filter(response_id__in=unstored).exists()
    assert not OutputItem.objects.filter(response_id__in=unstored).exists()
    assert not ResponseEvent.objects.filter(response_id__in=unstored).exists()
    # The purge only takes unstored responses.
    assert alice.responses.retrieve(kept.id).output_text == kept.output_text
