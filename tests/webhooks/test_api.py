"""Webhook endpoints as the openai SDK manages them (``client.webhooks``): create, list,
update, delete, secret rotation and test events, against the API in this process. The
deliveries of response events are tests/live/test_webhooks.py."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.conftest import sdk_client
from tests.helpers import new_key, new_tenant
from tests.live.webhook_receiver import Receiver

pytestmark = pytest.mark.core

RESPONSE_TYPES = ["response.completed", "response.failed", "response.cancelled", "response.incomplete"]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def test_endpoints_are_managed_with_the_sdk(carol: openai.OpenAI, receiver: Receiver, bob: openai.OpenAI):
    created = carol.webhooks.create(name="ops", url=receiver.url, event_types=["response.completed"])
    assert created.id and created.object == "webhook_endpoint"
    assert created.signing_secret.startswith("whsec_")
    assert created.signing_secret_hint.endswith(created.signing_secret[-4:])
    assert created.updated_at == created.created_at

    fetched = carol.webhooks.retrieve(created.id)
    assert (fetched.name, fetched.url, fetched.event_types) == ("ops", receiver.url, ["response.completed"])
    assert "signing_secret" not in fetched.model_dump()

    updated = carol.webhooks.update(created.id, name="ops-2", event_types=RESPONSE_TYPES)
    assert (updated.name, updated.event_types) == ("ops-2", RESPONSE_TYPES)
    unchanged = carol.webhooks.update(created.id, name="ops-2")
    assert unchanged.updated_at == updated.updated_at

    second = carol.webhooks.create(name="second", url=receiver.url, event_types=["response.failed"])
    listed = carol.webhooks.list(limit=1)
    assert [endpoint.id for endpoint in listed.data] == [second.id] and listed.has_more
    assert [endpoint.id for endpoint in carol.webhooks.list(limit=1, after=second.id).data] == [created.id]

    assert carol.webhooks.event_types.list().data == [
        *RESPONSE_TYPES, "batch.completed", "batch.failed", "batch.expired", "batch.cancelled"]

    rotated = carol.webhooks.rotate_secret(created.id)
    assert rotated.signing_secret.startswith("whsec_") and rotated.signing_secret != created.signing_secret

    # Another tenant's ids are not found, for every method.
    for call in (lambda: bob.webhooks.retrieve(created.id), lambda: bob.webhooks.delete(created.id),
                 lambda: bob.webhooks.update(created.id, name="x"), lambda: bob.webhooks.rotate_secret(created.id)):
        with pytest.raises(openai.NotFoundError):
            call()
    assert created.id not in [endpoint.id for endpoint in bob.webhooks.list().data]

    deleted = carol.webhooks.delete(created.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (created.id, True, "webhook_endpoint.deleted")
    with pytest.raises(openai.NotFoundError):
        carol.webhooks.retrieve(created.id)


def test_bad_endpoints_are_refused_with_a_400(carol: openai.OpenAI, receiver: Receiver):
    cases = [
        ({"url": "http://10.1.2.3/hook"}, "url"),
        ({"url": "http://169.254.169.254/latest/meta-data"}, "url"),
        ({"url": "http://[::1]:8080/hook"}, "url"),
        ({"url": "file:///etc/passwd"}, "url"),
        ({"event_types": ["fine_tuning.job.succeeded"]}, "event_types[0]"),
        ({"event_types": []}, "event_types"),
        ({"name": ""}, "name"),
    ]
    for change, param in cases:
        body = {"name": "x", "url": receiver.url, "event_types": ["response.completed"], **change}
        with pytest.raises(openai.BadRequestError) as raised:
            carol.webhooks.create(**body)
        assert raised.value.param == param, change
    assert carol.webhooks.list().data == []


def test_read_only_keys_may_list_but_not_write(stack, db_access, receiver: Receiver):
    tenant = new_tenant("webhooks")
    reader = sdk_client(stack, new_key(tenant, scope="read_only"))
    writer = sdk_client(stack, new_key(tenant))
    endpoint = writer.webhooks.create(name="x", url=receiver.url, event_types=["response.completed"])
    assert [e.id for e in reader.webhooks.list().data] == [endpoint.id]
    for call in (lambda: reader.webhooks.create(name="y", url=receiver.url, event_types=["response.completed"]),
                 lambda: reader.webhooks.delete(endpoint.id), lambda: reader.webhooks.rotate_secret(endpoint.id),
                 lambda: reader.webhooks.test(endpoint.id, event_type="response.completed")):
        with pytest.raises(openai.PermissionDeniedError):
            call()
    # Nothing written: no endpoint made or deleted, no test event sent, the secret not rotated.
    assert [e.id for e in writer.webhooks.list().data] == [endpoint.id] and receiver.received == []
    writer.webhooks.test(endpoint.id, event_type="response.completed")
    event = writer.webhooks.unwrap(receiver.received[0].body, receiver.received[0].headers,
                                   secret=endpoint.signing_secret)
    assert event.type == "response.completed"


def test_a_test_event_reports_the_receivers_status_code(carol: openai.OpenAI, receiver: Receiver):
    endpoint = carol.webhooks.create(name="ops", url=receiver.url, event_types=["response.completed"])
    receiver.statuses = [404]
    result = carol.webhooks.test(endpoint.id, event_type="response.failed")
    assert (result.status_code, result.success, result.event_type) == (404, True, "response.failed")
    assert result.webhook_endpoint_id == endpoint.id
    event = carol.webhooks.unwrap(receiver.received[0].body, receiver.received[0].headers,
                                  secret=endpoint.signing_secret)
    assert event.type == "response.failed"
    with pytest.raises(openai.BadRequestError):
        carol.webhooks.test(endpoint.id, event_type="fine_tuning.job.succeeded")


def test_a_rotation_that_keeps_the_old_secret_signs_with_both(carol: openai.OpenAI, receiver: Receiver):
    endpoint = carol.webhooks.create(name="ops", url=receiver.url, event_types=["response.completed"])
    rotated = carol.webhooks.rotate_secret(endpoint.id, keep_old_secret_active_for_24_hours=True)
    carol.webhooks.test(endpoint.id, event_type="response.completed")
    [received] = receiver.received
    for secret in (endpoint.signing_secret, rotated.signing_secret):
        assert carol.webhooks.unwrap(received.body, received.headers, secret=secret).type == "response.completed"
    carol.webhooks.rotate_secret(endpoint.id)  # without keeping: the old one stops at once
    carol.webhooks.test(endpoint.id, event_type="response.completed")
    with pytest.raises(openai.InvalidWebhookSignatureError):
        carol.webhooks.unwrap(receiver.received[1].body, receiver.received[1].headers,
                              secret=rotated.signing_secret)
