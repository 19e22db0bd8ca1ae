"""The Redis broker transport of every process: kombu's, except that closing a channel
whose connection is already gone no longer raises.

When Redis goes away, a worker's consumer closes its connection, and kombu's channel then
restores the messages it holds unacknowledged (one whose early ack failed as Redis went
away) through a client of that closed connection: an AttributeError (``hostname`` of
None, in the transport's _connparams) that Celery calls unrecoverable, and the worker
exits. Skipping that restore loses nothing: Redis keeps such messages in its unacked index
and restores them after the visibility timeout (if it kept its data), and a message
delivered twice is a no-op, the database deciding what runs (worker/delivery.py)."""

from __future__ import annotations

import logging
from typing import Any, cast

from kombu.transport import redis

log = logging.getLogger(__name__)


class QoS(redis.QoS):
    def restore_unacked(self, client: Any = None) -> None:
        try:
            super().restore_unacked(client)
        except (AttributeError, *self.channel.connection.connection_errors) as error:
            delivered = cast(dict[Any, Any], self._delivered)  # kombu's class default is None; __init__ sets it
            log.warning("%d unacknowledged message(s) not restored, the broker connection being gone (%s: %s); "
                        "Redis restores them after the visibility timeout", len(delivered),
                        type(error).__name__, error)
            delivered.clear()


class Channel(redis.Channel):
    QoS = QoS


class Transport(redis.Transport):
    Channel = Channel
