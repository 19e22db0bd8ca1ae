"""POST /v1/chat/completions, as ``client.chat.completions.create`` calls it: an unstored
foreground response, created as a response is (the key's scope, the tenant's quotas), then
answered whole once it ends or streamed as it runs. A client that hangs up cancels it."""

from __future__ import annotations

from django.http import HttpResponseBase, JsonResponse
from rest_framework.request import Request

from responses_app import selectors
from responses_app.chat_completions import openapi
from responses_app.chat_completions.chunks import ChunkStream, chat_frames
from responses_app.chat_completions.completion import completion_object
from responses_app.chat_completions.requests import ChatCompletionRequest, parse_chat_completion
from responses_app.http.base import ApiView
from responses_app.http.params import json_body
from responses_app.http.throttling import TenantCreateThrottle
from responses_app.lib.asyncdb import db
from responses_app.models import Response
from responses_app.services.create import create_response
from responses_app.services.foreground import finished_or_cancelled, frames_from_created
from responses_app.stream import creates_first
from responses_app.stream.sse import sse_response
from responses_app.wire.errors import APIError


class ChatCompletionsView(ApiView):
    """POST /v1/chat/completions"""

    throttle_classes = [TenantCreateThrottle]
    checks_in_handler = True

    @openapi.CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        with creates_first.create_under_way():
            response, completion = await db(self._create)(request)
        if completion.stream:
            stream = ChunkStream(response.pk, int(response.created_at.timestamp()), response.model,
                                 completion.include_usage, completion.logprobs)
            return sse_response(chat_frames(frames_from_created(response, cancel_on_hang_up=True), stream))
        finished = await finished_or_cancelled(response.pk)
        return JsonResponse(completion_object(await db(selectors.render_response)(finished), completion.logprobs))

    def _create(self, request: Request) -> tuple[Response, ChatCompletionRequest]:
        self.initial(request)  # authentication, the key's scope, the quota (checks_in_handler)
        completion = parse_chat_completion(json_body(request))
        try:
            return create_response(request.user.tenant, completion.create), completion
        except APIError as error:
            raise completion.renamed(error) from None
