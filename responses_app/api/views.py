"""The /v1 endpoints of responses and models. Views are thin: parse, call a service or a
selector, render; authentication, the key scope and the create quota come from ApiView."""

from __future__ import annotations

import asyncio
import hashlib
import json

from django.conf import settings
from django.http import HttpResponse, HttpResponseBase, JsonResponse
from rest_framework.request import Request

from responses_app import selectors
from responses_app.api import openapi
from responses_app.context.compaction import compacted_response
from responses_app.http.base import ApiView
from responses_app.http.params import bool_param, include_param, int_param, json_body, known_query, order_param
from responses_app.http.throttling import TenantCreateThrottle
from responses_app.lib.asyncdb import db
from responses_app.models import Response
from responses_app.services.cancel import delete_response, request_cancel
from responses_app.services.create import count_input_tokens, create_response, start_compaction
from responses_app.services.foreground import finished_or_cancelled, frames_from_created, until_finished
from responses_app.stream import creates_first
from responses_app.stream.event_names import named
from responses_app.stream.reader import follow_frames
from responses_app.stream.sse import sse_response
from responses_app.validation.create import parse_compact_request, parse_count_request, parse_create_request
from responses_app.validation.request import CreateRequest
from responses_app.wire.codex_catalog import codex_catalog
from responses_app.wire.errors import InvalidRequest, NotFound
from responses_app.wire.objects import model_object

CANCEL_WAIT_S = 5.0


class ResponsesView(ApiView):
    """POST /v1/responses"""

    throttle_classes = [TenantCreateThrottle]
    checks_in_handler = True

    @openapi.CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        with creates_first.create_under_way():
            response, create_request = await db(self._create)(request)
        if create_request.stream:
            # A foreground stream's client is its only reader: when it hangs up, stop the work.
            return sse_response(named(frames_from_created(response, cancel_on_hang_up=not response.background),
                                      request.user.api_key.event_names))
        if response.background:
            return JsonResponse(await db(selectors.render_response)(response))
        finished = await finished_or_cancelled(response.pk)
        return JsonResponse(await db(selectors.render_response)(finished))

    def _create(self, request: Request) -> tuple[Response, CreateRequest]:
        self.initial(request)  # authentication, the key's scope, the quota (checks_in_handler)
        create_request = parse_create_request(json_body(request))
        return create_response(request.user.tenant, create_request), create_request


class ResponseView(ApiView):
    """GET (JSON or ``stream=true``) and DELETE /v1/responses/{id}"""

    @openapi.RETRIEVE
    async def get(self, request: Request, response_id: str) -> HttpResponseBase:
        # include_obfuscation: the SDK's; a hint this server has nothing to do with (it pads no deltas).
        include = include_param(request.query_params, "stream", "starting_after", "include_obfuscation")
        stream = bool_param(request.query_params, "stream")
        starting_after = int_param(request.query_params, "starting_after", minimum=-1)
        response = await db(selectors.get_response)(request.user.tenant, response_id)
        if not stream:
            if starting_after is not None:
                raise InvalidRequest("'starting_after' is only allowed with stream=true.", param="starting_after")
            return JsonResponse(await db(selectors.render_response)(response, include))
        cursor = -1 if starting_after is None else starting_after
        if response.is_terminal and cursor > response.last_sequence_number:
            raise InvalidRequest(
                f"'starting_after' ({cursor}) is beyond the last event ({response.last_sequence_number}) of this "
                "finished response.",
                param="starting_after",
            )
        return sse_response(named(follow_frames(response.pk, cursor, error_events=True),
                                  request.user.api_key.event_names))

    @openapi.DELETE
    async def delete(self, request: Request, response_id: str) -> HttpResponseBase:
        response = await db(selectors.get_response)(request.user.tenant, response_id)
        await db(delete_response)(response)
        return JsonResponse({"id": response_id, "object": "response.deleted", "deleted": True})


class ResponseCancelView(ApiView):
    """POST /v1/responses/{id}/cancel"""

    @openapi.CANCEL
    async def post(self, request: Request, response_id: str) -> HttpResponseBase:
        response = await db(selectors.get_response)(request.user.tenant, response_id)
        if not response.background:
            raise InvalidRequest("Only background responses can be cancelled.", param="response_id")
        response = await db(request_cancel)(response)
        if not response.is_terminal:
            # The worker honours the flag within a second; answer with the cancelled response
            # when it does, or with the response as it stands if the worker is slow.
            try:
                response = await asyncio.wait_for(until_finished(response.pk), timeout=CANCEL_WAIT_S)
            except TimeoutError:
                response = await db(selectors.get_response)(request.user.tenant, response_id)
        return JsonResponse(await db(selectors.render_response)(response))


class InputItemsView(ApiView):
    """GET /v1/responses/{id}/input_items"""

    @openapi.INPUT_ITEMS
    async def get(self, request: Request, response_id: str) -> HttpResponseBase:
        query = request.query_params
        limit = int_param(query, "limit", minimum=1, maximum=100) or 20
        order = order_param(query)
        if include_param(query, "after", "limit", "order"):
            raise InvalidRequest("include is not supported for input items.", param="include")
        response = await db(selectors.get_response)(request.user.tenant, response_id)
        page = await db(selectors.input_items_page)(response, after=query.get("after"), limit=limit, order=order)
        return JsonResponse(page)


class CompactView(ApiView):
    """POST /v1/responses/compact: a model turn that summarizes the context, waited for."""

    throttle_classes = [TenantCreateThrottle]

    @openapi.COMPACT
    async def post(self, request: Request) -> HttpResponseBase:
        compact_request = parse_compact_request(json_body(request))
        turn, kept = await db(start_compaction)(request.user.tenant, compact_request)
        finished = await finished_or_cancelled(turn.pk)
        return JsonResponse(await db(compacted_response)(finished, kept))


class InputTokensView(ApiView):
    """POST /v1/responses/input_tokens: a read, so a read-only key may count."""

    writes = False

    @openapi.INPUT_TOKENS
    async def post(self, request: Request) -> HttpResponseBase:
        count_request = parse_count_request(json_body(request))
        input_tokens = await db(count_input_tokens)(request.user.tenant, count_request)
        return JsonResponse({"object": "response.input_tokens", "input_tokens": input_tokens})


class ModelsView(ApiView):
    """GET /v1/models: the OpenAI list; with ``client_version`` (Codex CLI asks so), the
    catalog Codex reads for a custom provider (wire/codex_catalog.py)."""

    @openapi.MODELS
    async def get(self, request: Request) -> HttpResponseBase:
        known_query(request.query_params, ("client_version",))
        if "client_version" not in request.query_params:
            return JsonResponse({"object": "list", "data": [model_object(model) for model in settings.MODEL_REGISTRY]})
        body = json.dumps(codex_catalog(settings.MODEL_REGISTRY))
        etag = f'"{hashlib.sha256(body.encode()).hexdigest()[:32]}"'
        if request.headers.get("If-None-Match") == etag:
            return HttpResponse(status=304, headers={"ETag": etag})
        return HttpResponse(body, content_type="application/json", headers={"ETag": etag})


class ModelView(ApiView):
    """GET /v1/models/{id}"""

    @openapi.MODEL
    async def get(self, request: Request, model_id: str) -> HttpResponseBase:
        if model_id not in settings.MODEL_REGISTRY:
            raise NotFound(f"The model '{model_id}' does not exist.", param="model", code="model_not_found")
        return JsonResponse(model_object(model_id))
