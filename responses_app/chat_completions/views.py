"""/v1/chat/completions, as ``client.chat.completions`` calls it.

A create is an unstored foreground response per choice (``n``), created as a response is
(the key's scope, the tenant's quotas: all of them or none), then answered whole once they
end or streamed as they run; a client that hangs up cancels them. With ``store: true`` the
completion is kept (stored.py): listed, retrieved, updated, deleted, and its messages listed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from django.db import transaction
from django.http import HttpResponseBase, JsonResponse
from drf_spectacular.utils import extend_schema_view
from rest_framework.request import Request

from responses_app import selectors
from responses_app.chat_completions import openapi, stored
from responses_app.chat_completions.chunks import ChunkStream, chat_frames
from responses_app.chat_completions.completion import completion_object, reasoning_names, with_reasoning_names
from responses_app.chat_completions.requests import ChatCompletionRequest, parse_chat_completion
from responses_app.http.base import ApiView
from responses_app.http.params import json_body, page_params
from responses_app.http.resource import TenantObjectView
from responses_app.http.throttling import TenantCreateThrottle
from responses_app.lib.asyncdb import db
from responses_app.models import Response, ResponseStatus, Tenant
from responses_app.observability import recorder
from responses_app.services.create import create_response
from responses_app.services.foreground import finished_or_cancelled, frames_from_created
from responses_app.stream import creates_first
from responses_app.stream.sse import sse_response
from responses_app.wire.errors import APIError, InvalidRequest
from responses_app.wire.metadata import parse_metadata
from responses_app.wire.request_body import body_fields

# Stored completions and their messages list oldest first unless told (as at OpenAI).
ASCENDING = "asc"


class ChatCompletionsView(ApiView):
    """POST (create) and GET (list) /v1/chat/completions"""

    throttle_classes = [TenantCreateThrottle]
    checks_in_handler = True

    def get_throttles(self) -> list[Any]:
        return super().get_throttles() if self.request.method == "POST" else []  # a list creates nothing

    @openapi.CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        started = time.monotonic()
        with creates_first.create_under_way():
            responses, completion = await db(self._create)(request)
        first = responses[0]  # names the completion
        names = _reasoning_names(request)
        if completion.stream:
            streams = [ChunkStream(first.pk, int(first.created_at.timestamp()), first.model, completion.include_usage,
                                   completion.logprobs, index, names) for index in range(len(responses))]
            frames = chat_frames([frames_from_created(response, cancel_on_hang_up=True) for response in responses],
                                 streams)
            return sse_response(_observed(frames, first.model, started))
        finished = await _all_finished(responses)
        recorder.chat_completion_ended(first.model, False, time.monotonic() - started)
        rendered = [await db(selectors.render_response)(response) for response in finished]
        return JsonResponse(with_reasoning_names(completion_object(rendered, completion.logprobs), names))

    def _create(self, request: Request) -> tuple[list[Response], ChatCompletionRequest]:
        self.initial(request)  # authentication, the key's scope, the quota (checks_in_handler)
        completion = parse_chat_completion(json_body(request))
        try:
            with transaction.atomic():
                responses = [create_response(request.user.tenant, create) for create in completion.choices()]
                if completion.create.params.chat.stored:
                    stored.record(request.user.tenant, completion, responses)
                return responses, completion
        except APIError as error:
            raise completion.renamed(error) from None

    @openapi.CHAT_COMPLETION_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        query = request.query_params
        metadata = {name[len("metadata["):-1]: value for name, value in query.items()
                    if name.startswith("metadata[") and name.endswith("]")}
        after, limit, order = page_params(query, orders=True, default_order=ASCENDING,
                                          extra=("model", *(f"metadata[{key}]" for key in metadata)))
        page = await db(stored.completions_page)(request.user.tenant, after=after, limit=limit, order=order,
                                                 model=query.get("model"), metadata=metadata)
        names = _reasoning_names(request)
        return JsonResponse({**page, "data": [with_reasoning_names(each, names) for each in page["data"]]})


def _reasoning_names(request: Request) -> tuple[str, ...]:
    return reasoning_names(request.user.api_key.reasoning_fields)


async def _all_finished(responses: list[Response]) -> list[Response]:
    """Every choice's response once it ends; when one fails, the others are cancelled (the
    completion fails with it) and the failed one is all that is returned."""
    waits = [asyncio.ensure_future(finished_or_cancelled(response.pk)) for response in responses]
    try:
        for next_end in asyncio.as_completed(waits):
            ended = await next_end
            if ended.status == ResponseStatus.FAILED:
                return [ended]
        return [wait.result() for wait in waits]
    finally:
        for wait in waits:
            wait.cancel()  # a choice still running is cancelled (finished_or_cancelled)
        await asyncio.gather(*waits, return_exceptions=True)


async def _observed(frames: AsyncIterator[bytes | None], model: str, started: float) -> AsyncIterator[bytes | None]:
    """The completion's stream, its end observed for /metrics (a hang-up's too)."""
    try:
        async for frame in frames:
            yield frame
    finally:
        recorder.chat_completion_ended(model, True, time.monotonic() - started)


@extend_schema_view(get=openapi.CHAT_COMPLETION_RETRIEVE, post=openapi.CHAT_COMPLETION_UPDATE,
                    delete=openapi.CHAT_COMPLETION_DELETE)
class ChatCompletionView(TenantObjectView):
    """GET, POST (update its metadata) and DELETE /v1/chat/completions/{id}: a stored one"""

    id_param, deleted_object = "completion_id", "chat.completion.deleted"

    def retrieve(self, tenant: Tenant, object_id: str) -> dict[str, Any]:
        return with_reasoning_names(stored.get_completion(tenant, object_id), _reasoning_names(self.request))

    def update(self, tenant: Tenant, object_id: str, body: Any) -> dict[str, Any]:
        body_fields(body, ("metadata",))
        if "metadata" not in body:  # null is sent to clear it (the SDK's Required[Optional[Metadata]])
            raise InvalidRequest("Missing required parameter: 'metadata'.", param="metadata",
                                 code="missing_required_parameter")
        return with_reasoning_names(stored.update_metadata(tenant, object_id, parse_metadata(body["metadata"])),
                                    _reasoning_names(self.request))

    def destroy(self, tenant: Tenant, object_id: str) -> None:
        stored.delete_completion(tenant, object_id)


class ChatCompletionMessagesView(ApiView):
    """GET /v1/chat/completions/{id}/messages: a stored one's request messages"""

    @openapi.CHAT_COMPLETION_MESSAGES
    async def get(self, request: Request, completion_id: str) -> HttpResponseBase:
        query = request.query_params
        after, limit, order = page_params(query, orders=True, default_order=ASCENDING)
        page = await db(stored.messages_page)(request.user.tenant, completion_id, after=after, limit=limit,
                                              order=order)
        return JsonResponse(page)

