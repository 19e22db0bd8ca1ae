"""A response's event log, in either of its two forms: one row per event while the
response runs, one packed block once it has ended.

Packing (``pack``) follows a response's end, on the maintenance queue
(stream/pack_requests.py): its events, framed exactly as SSE sends them, are compressed
into one EventLog row with the length of every frame, and the per-event rows are deleted
in the same transaction. Nothing writes a response's events after its terminal
transaction, and the row lock keeps a delete out, so the block is the whole log, forever.

Readers (``frames_after``) read the rows first and the block only when the rows return
nothing: each is one statement with a snapshot of its own, so a reader that passes the
switch sees the rows before it or the block after it, and its cursor (a sequence number)
picks up in either form at the same event. Replays are therefore byte-identical before
and after packing, for every starting point.
"""

from __future__ import annotations

import json
import logging
import sys
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from itertools import accumulate
from threading import Lock
from typing import Any

import zstandard
from django.conf import settings
from django.db import connection, transaction

from responses_app.models import TERMINAL_EVENT_TYPES, TERMINAL_STATUSES, EventLog, Response, ResponseEvent
from responses_app.stream.pack_requests import pack_requests
from responses_app.stream.sse import frame

log = logging.getLogger(__name__)
# Rows read per query while a response runs (a replay of a packed log has no such limit).
ROWS_PER_READ = 500
# A packed log is cut into writes of about this size, so that a long replay starts at once.
REPLAY_CHUNK_BYTES = 256 * 1024
ZSTD_LEVEL = 9


# The readers' statements, written out: a stream reads after every commit of its response,
# and building these through the ORM cost more of the web process than running them.
ROWS_AFTER = (f"SELECT sequence_number, type, data FROM {ResponseEvent._meta.db_table} "
              "WHERE response_id = %s AND sequence_number > %s ORDER BY sequence_number")
ROWS_AFTER_UP_TO = f"{ROWS_AFTER} LIMIT %s"
PACKED_LOG = f"SELECT frames, frame_lengths FROM {EventLog._meta.db_table} WHERE response_id = %s"


@dataclass(frozen=True)
class Frames:
    """Whole SSE frames after a cursor. ``data`` is empty when there is nothing (yet)."""

    data: bytes
    last_sequence_number: int  # of the last frame in data (the cursor when data is empty)
    ends: bool  # data holds the terminal event
    # More was committed when the read ran than it returned (a full read, or a packed log
    # sent in parts): read again at once rather than wait for the doorbell.
    more: bool = False


# --- reading ----------------------------------------------------------------------------------


def frames_after(response_id: str, after: int, max_bytes: int = REPLAY_CHUNK_BYTES) -> Frames:
    """The frames of the events with sequence_number > ``after``: up to ROWS_PER_READ rows,
    or about ``max_bytes`` of a packed log (always at least one frame)."""
    rows = _rows(response_id, after, ROWS_PER_READ)
    if rows:
        ends = rows[-1][1] in TERMINAL_EVENT_TYPES
        return Frames(b"".join(frame(kind, data) for _, kind, data in rows), rows[-1][0], ends,
                      more=not ends and len(rows) == ROWS_PER_READ)
    packed = packed_log(response_id)
    if packed is None or after >= packed.last_sequence_number:
        return Frames(b"", after, False)
    last = packed.last_within(after, max_bytes)
    ends = last == packed.last_sequence_number
    return Frames(packed.slice(after, last), last, ends, more=not ends)


def events(response_id: str, after: int = -1, limit: int | None = None) -> list[tuple[int, str, dict[str, Any]]]:
    """(sequence_number, type, payload) of the events after ``after``, in order, from
    either form: for the admin's timeline and for tests."""
    found = _rows(response_id, after, limit)
    if found:
        return [(number, kind, json.loads(data)) for number, kind, data in found]
    packed = packed_log(response_id)
    if packed is None or after >= packed.last_sequence_number:
        return []
    last = packed.last_sequence_number if limit is None else min(after + limit, packed.last_sequence_number)
    return [(after + 1 + n, *parse_frame(one)) for n, one in enumerate(packed.frames(after, last))]


def _rows(response_id: str, after: int = -1, limit: int | None = None) -> list[tuple[int, str, str]]:
    """(sequence_number, type, data) of the event rows after ``after``, in order."""
    with connection.cursor() as cursor:
        if limit is None:
            cursor.execute(ROWS_AFTER, [response_id, after])
        else:
            cursor.execute(ROWS_AFTER_UP_TO, [response_id, after, limit])
        return cursor.fetchall()


def parse_frame(frame: bytes) -> tuple[str, dict[str, Any]]:
    """(type, payload) of one SSE frame (``event: <type>\ndata: <json>\n\n``)."""
    head, _, data = frame.partition(b"\ndata: ")
    return head.removeprefix(b"event: ").decode(), json.loads(data)


class PackedLog:
    """A decompressed block: all frames and where each ends."""

    def __init__(self, frames: bytes, ends: array) -> None:
        self.data = frames
        self.ends = ends

    @property
    def last_sequence_number(self) -> int:
        return len(self.ends) - 1

    def start_of(self, sequence_number: int) -> int:
        return 0 if sequence_number == 0 else self.ends[sequence_number - 1]

    def slice(self, after: int, last: int) -> bytes:
        """The frames of after+1 .. last."""
        return self.data[self.start_of(after + 1):self.ends[last]]

    def last_within(self, after: int, max_bytes: int) -> int:
        """The last sequence number whose frames after ``after`` fit in ``max_bytes`` (at least one)."""
        start = self.start_of(after + 1)
        last = after + 1
        while last < self.last_sequence_number and self.ends[last + 1] - start <= max_bytes:
            last += 1
        return last

    def frames(self, after: int, last: int) -> list[bytes]:
        return [self.data[self.start_of(n):self.ends[n]] for n in range(after + 1, last + 1)]


class _Cache:
    """Recently read packed logs of this process, decompressed (they never change), up to
    PACKED_LOG_CACHE_BYTES: a replay reads its block once, not once per chunk."""

    def __init__(self) -> None:
        self._logs: OrderedDict[str, PackedLog] = OrderedDict()
        self._bytes = 0
        self._lock = Lock()

    def get(self, response_id: str) -> PackedLog | None:
        with self._lock:
            found = self._logs.get(response_id)
            if found is not None:
                self._logs.move_to_end(response_id)
            return found

    def put(self, response_id: str, packed: PackedLog) -> None:
        with self._lock:
            if response_id in self._logs:
                return
            self._logs[response_id] = packed
            self._bytes += len(packed.data)
            while self._bytes > settings.PACKED_LOG_CACHE_BYTES and len(self._logs) > 1:
                _, dropped = self._logs.popitem(last=False)
                self._bytes -= len(dropped.data)


_cache = _Cache()


def packed_log(response_id: str) -> PackedLog | None:
    cached = _cache.get(response_id)
    if cached is not None:
        return cached
    with connection.cursor() as cursor:
        cursor.execute(PACKED_LOG, [response_id])
        row = cursor.fetchone()
    if row is None:
        return None
    packed = unpack(bytes(row[0]), bytes(row[1]))
    _cache.put(response_id, packed)
    return packed


# --- packing ----------------------------------------------------------------------------------


def compress(frames: list[bytes]) -> tuple[bytes, bytes]:
    """The frames, concatenated, and their lengths (uint32 little-endian), each compressed."""
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    # Lengths, not end offsets: lengths repeat (the deltas of one item), offsets never do.
    lengths = array("I", (len(one) for one in frames))
    if sys.byteorder != "little":
        lengths.byteswap()
    return compressor.compress(b"".join(frames)), compressor.compress(lengths.tobytes())


def unpack(frames: bytes, lengths: bytes) -> PackedLog:
    decompressor = zstandard.ZstdDecompressor()
    sizes = array("I")
    sizes.frombytes(decompressor.decompress(lengths))
    if sys.byteorder != "little":
        sizes.byteswap()
    return PackedLog(decompressor.decompress(frames), array("I", accumulate(sizes)))


def pack(response_id: str) -> bool:
    """Pack a finished response's event rows into its EventLog, in one transaction.
    Returns False, changing nothing, when the response is gone, not finished, already
    packed, or its rows are not the dense 0..last_sequence_number."""
    with transaction.atomic():
        response = (Response.objects.select_for_update().filter(pk=response_id, status__in=TERMINAL_STATUSES)
                    .only("id", "last_sequence_number").first())
        if response is None or EventLog.objects.filter(response_id=response_id).exists():
            return False
        rows = _rows(response_id)
        if [n for n, _, _ in rows] != list(range(response.last_sequence_number + 1)):
            log.error("not packing %s: its event rows are not 0..%d", response_id, response.last_sequence_number)
            return False
        frames = [frame(kind, data) for _, kind, data in rows]
        packed_frames, packed_lengths = compress(frames)
        EventLog.objects.create(response_id=response_id, event_count=len(frames),
                                raw_bytes=sum(len(one) for one in frames), frames=packed_frames,
                                frame_lengths=packed_lengths)
        ResponseEvent.objects.filter(response_id=response_id).delete()
    return True


def pack_after_commit(response_id: str) -> None:
    """Once the caller's transaction (the one that ended the response) commits, ask the
    maintenance queue to pack its log (stream/pack_requests.py)."""
    if settings.EVENT_LOG_PACKING:
        transaction.on_commit(lambda: pack_requests.add(response_id))


def pack_many(response_ids: list[str]) -> int:
    """Pack each of these finished responses (the maintenance queue's task); a failure is
    logged, never raised: its rows are a complete log too, and the sweep tries again."""
    packed = 0
    for response_id in response_ids:
        try:
            packed += pack(response_id)
        except Exception:
            log.exception("packing the event log of %s failed; its rows stay", response_id)
    return packed


def pack_unpacked(limit: int = 200) -> int:
    """Pack finished responses whose rows were left (the process ended between the
    terminal commit and its packing, packing failed or was off); returns how many."""
    if not settings.EVENT_LOG_PACKING:
        return 0
    # From the rows: with packing on, that table holds only the responses that run.
    finished = ResponseEvent.objects.filter(sequence_number=0, response__status__in=TERMINAL_STATUSES).values_list(
        "response_id", flat=True)[:limit]
    return sum(pack(response_id) for response_id in list(finished))
