"""A stored file's bytes as an HTTP answer, read in chunks off the event loop.

Django serves a FileResponse under ASGI by reading its synchronous iterator whole into
memory first (it warns so): a 100 MB container file would be 100 MB of the web process's
memory per download. Here each chunk is read on a thread and sent before the next."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import IO

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header

CHUNK_BYTES = 256 * 1024


def attachment(file: IO[bytes], filename: str, size: int,
               content_type: str = "application/octet-stream") -> StreamingHttpResponse:
    """The open ``file`` of ``size`` bytes (closed once sent) as a download named ``filename``."""

    async def chunks() -> AsyncIterator[bytes]:
        try:
            while chunk := await asyncio.to_thread(file.read, CHUNK_BYTES):
                yield chunk
        finally:
            file.close()

    response = StreamingHttpResponse(chunks(), content_type=content_type)
    response["Content-Length"] = str(size)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response
