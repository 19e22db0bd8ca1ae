"""A batch's output file and error file, in OpenAI's line format and in input order:

    {"id": "batch_req_…", "custom_id": …, "response": {"status_code": 200, "request_id": …,
     "body": <the Response object, or the chat.completion>}, "error": null}

A request refused at create, or whose response failed, is a line of the error file with the
status code and body a create would have had; one that the batch's end cut short has
``"response": null`` and ``"error": {"code": "batch_expired" | "batch_cancelled", …}``."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.core.files import File

from responses_app.batches.endpoints import result_body
from responses_app.files import store as files
from responses_app.models import Batch, BatchRequest, BatchRequestState, OutputItem, Response, StoredFile
from responses_app.response_object import response_object
from responses_app.wire.request_body import LOGPROBS_INCLUDE

CHUNK = 500
# Files up to this size are built in memory, larger ones in a temporary file.
SPOOL_BYTES = 8 * 2**20
_CUT_SHORT = {
    "batch_expired": "This request could not be executed before the completion window expired.",
    "batch_cancelled": "This request was not executed: the batch was cancelled.",
}


@dataclass
class Written:
    output_id: str = ""
    error_id: str = ""
    usage: dict[str, Any] = field(default_factory=dict)

    def delete(self) -> None:
        for file_id in (self.output_id, self.error_id):
            row = StoredFile.objects.filter(pk=file_id).first() if file_id else None
            if row is not None:
                files.delete_row(row)


def write_results(batch: Batch) -> Written:
    """Store the batch's output and error files (each only if it has a line) for its tenant."""
    usage = _Usage()
    cut_short = "batch_expired" if batch.expired_at else "batch_cancelled"
    with (tempfile.SpooledTemporaryFile(SPOOL_BYTES) as output, tempfile.SpooledTemporaryFile(SPOOL_BYTES) as errors):
        for request, response, items in _ended_requests(batch):
            line = _line(request, response, items, cut_short, batch.endpoint)
            if line["response"] is not None and line["response"]["status_code"] == 200:
                assert response is not None  # a 200 is a completed request's (a failed one's is an APIError's)
                usage.add(response.usage)
                target = output
            else:
                target = errors
            target.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
        return Written(output_id=_store(batch, output, "output"), error_id=_store(batch, errors, "error"),
                       usage=usage.totals())


def _ended_requests(batch: Batch) -> Iterator[tuple[BatchRequest, Response | None, list[dict[str, Any]]]]:
    """Every request of the batch by line, with its response and output items, read in chunks."""
    after = -1
    while True:
        chunk = list(BatchRequest.objects.filter(batch=batch, line__gt=after).order_by("line")[:CHUNK])
        if not chunk:
            return
        after = chunk[-1].line
        ids = [request.response_id for request in chunk if request.response_id]
        responses = Response.objects.in_bulk(ids)
        items: dict[str, list[dict[str, Any]]] = {}
        for response_id, data in (OutputItem.objects.filter(response_id__in=ids)
                                  .order_by("response_id", "output_index").values_list("response_id", "data")):
            items.setdefault(response_id, []).append(data)
        for request in chunk:
            yield request, responses.get(request.response_id), items.get(request.response_id, [])


def _line(request: BatchRequest, response: Response | None, items: list[dict[str, Any]],
          cut_short: str, endpoint: str) -> dict[str, Any]:
    line: dict[str, Any] = {"id": request.id, "custom_id": request.custom_id, "response": None, "error": None}
    if request.state == BatchRequestState.COMPLETED and response is not None:
        line["response"] = {"status_code": 200, "request_id": response.pk,
                            "body": result_body(endpoint, response_object(response, items),
                                                LOGPROBS_INCLUDE in response.params.include)}
    elif request.state == BatchRequestState.FAILED and request.error is not None:
        line["response"] = {"status_code": request.error["status_code"], "request_id": None,
                            "body": request.error["body"]}
    elif request.state == BatchRequestState.FAILED and response is not None:
        line["response"] = {"status_code": 500, "request_id": response.pk, "body": {"error": response.error}}
    else:  # cancelled or expired (or its response was deleted meanwhile)
        line["error"] = {"code": cut_short, "message": _CUT_SHORT[cut_short]}
    return line


def _store(batch: Batch, content: IO[bytes], kind: str) -> str:
    size = content.tell()
    if not size:
        return ""
    content.seek(0)
    upload = File(content, name=f"batch_{batch.pk}_{kind}.jsonl")
    upload.size = size
    return files.create_output_file(batch.tenant, upload, batch.output_expires_after_s).pk


class _Usage:
    """The batch's usage: the sum of its completed responses' (the SDK's BatchUsage)."""

    def __init__(self) -> None:
        self.input = self.cached = self.output = self.reasoning = 0

    def add(self, usage: dict[str, Any] | None) -> None:
        if not usage:
            return
        self.input += usage.get("input_tokens", 0)
        self.cached += (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
        self.output += usage.get("output_tokens", 0)
        self.reasoning += (usage.get("output_tokens_details") or {}).get("reasoning_tokens", 0)

    def totals(self) -> dict[str, Any]:
        return {"input_tokens": self.input, "input_tokens_details": {"cached_tokens": self.cached},
                "output_tokens": self.output, "output_tokens_details": {"reasoning_tokens": self.reasoning},
                "total_tokens": self.input + self.output}
