"""Creates before stream reads, in one web process.

A create's first event (its response.created) needs the process's interpreter for a few
milliseconds: authentication, validation, the prompt render, the transaction, the send.
While a burst of creates arrives, the readers of responses already streaming want it
too, after every commit of theirs. A stream that is already flowing loses little by
waiting a moment (its next read returns more events at once); a client waiting for its
first event loses that moment outright. So while a create is under way, stream reads
wait for the creates to finish, for at most STREAM_READS_YIELD_S, so that a steady
stream of creates delays a stream's reads but never stops them.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings


class _Gate:
    def __init__(self) -> None:
        self.creates = 0
        self.clear = asyncio.Event()
        self.clear.set()


_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gate] = weakref.WeakKeyDictionary()


def _gate() -> _Gate:
    loop = asyncio.get_running_loop()
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = _Gate()
    return gate


@contextmanager
def create_under_way() -> Iterator[None]:
    """Around a create, up to the moment its response.created is ready to send."""
    gate = _gate()
    gate.creates += 1
    gate.clear.clear()
    try:
        yield
    finally:
        gate.creates -= 1
        if gate.creates == 0:
            gate.clear.set()


async def before_stream_read() -> None:
    """Wait while creates are under way, for at most STREAM_READS_YIELD_S."""
    gate = _gate()
    if gate.creates == 0 or settings.STREAM_READS_YIELD_S <= 0:
        return
    try:
        async with asyncio.timeout(settings.STREAM_READS_YIELD_S):
            await gate.clear.wait()
    except TimeoutError:
        pass
