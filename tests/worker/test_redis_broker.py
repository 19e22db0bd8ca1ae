"""The broker transport (responses_app/lib/redis_broker.py) on the test Redis: a channel
closed after its connection went away, holding a message whose ack failed, raises from
kombu's own transport (which stops a Celery worker) and not from this one's."""

from __future__ import annotations

import os
import uuid
from typing import Any

import kombu
import pytest
from kombu.transport import redis as kombu_redis

from project.celery import app
from responses_app.lib import redis_broker

pytestmark = pytest.mark.core


def close_after_the_connection_went(transport: Any) -> None:
    """What a worker's consumer does when Redis goes away while a message is unacknowledged."""
    queue = f"broker-test-{uuid.uuid4().hex[:8]}"
    with kombu.Connection(os.environ["REDIS_URL"]) as connection:
        connection.SimpleQueue(queue).put({"task": "any"})
    connection = kombu.Connection(os.environ["REDIS_URL"], transport=transport)
    channel = connection.channel()
    message = channel.basic_get(queue, no_ack=False)
    assert message.delivery_tag in channel.qos._delivered  # its ack has not reached Redis
    connection._do_close_transport()  # the connection error: the transport's client is gone,
    channel._pool = None  # and its pool with it
    try:
        channel.close()
    finally:  # the message's entries in Redis's unacked index, which the restore would have read
        with kombu.Connection(os.environ["REDIS_URL"]) as cleanup:
            client = cleanup.default_channel.client
            client.hdel("unacked", message.delivery_tag)
            client.zrem("unacked_index", message.delivery_tag)
            client.delete(queue)


def test_closing_a_channel_whose_connection_went_raises_from_kombu_s_transport_and_not_from_ours(caplog):
    with pytest.raises(AttributeError):
        close_after_the_connection_went(kombu_redis.Transport)

    close_after_the_connection_went(redis_broker.Transport)
    assert "1 unacknowledged message(s) not restored" in caplog.text


def test_the_app_s_broker_uses_it():
    with app.connection_for_read() as connection:
        assert isinstance(connection.transport, redis_broker.Transport)
