"""HTTP endpoints under /v1. Views are thin: parse, authorize, call a service or selector.

Create and retrieve are async views: they stream SSE or wait for a response to finish,
and must not hold one of Django's sync threads while they do. The other JSON endpoints
are DRF views.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.request import Request
from rest_framework.response import Response as DRFResponse
from rest_framework.views import APIView

from responses_app import quotas, selectors, services
from responses_app.api.validation.create import SUPPORTED_INCLUDE_VALUES, parse_create_request
from responses_app.api_keys import Caller, authenticate_bearer, require_write
from responses_app.asyncdb import db
from responses_app.errors import APIError, InvalidRequest, NotFound, error_response
from responses_app.models import Response
from responses_app.stream.reader import ResponseGone, follow_events, wait_until_finished
from responses_app.stream.sse import sse_response

AsyncView = Callable[..., Awaitable[HttpResponse]]
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CANCEL_WAIT_S = 5.0


def openai_errors(view: AsyncView) -> AsyncView:
    """Authenticate the bearer key, refuse writes to read-only keys, and render APIErrors
    in OpenAI's shape."""

    @functools.wraps(view)
    async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            caller = await db(authenticate_bearer)(request.headers.get("Authorization"))
            # Every write here (create, cancel, delete) is a non-read method, so checking
            # the method covers each one, and any write endpoint added later, before it
            # looks anything up: a 403 never tells whether an id exists.
            if request.method not in READ_METHODS:
                require_write(caller)
            return await view(request, caller, *args, **kwargs)
        except APIError as error:
            return error_response(error)

    return csrf_exempt(wrapper)


# --- /v1/responses -------------------------------------------------------------------------


@openai_errors
async def responses_collection(request: HttpRequest, caller: Caller) -> HttpResponse:
    if request.method != "POST":
        raise _method_not_allowed(request)
    try:
        body = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidRequest(f"We could not parse the JSON body of your request: {error}.") from error
    create_request = parse_create_request(body)
    await db(quotas.check_requests_per_minute)(caller.tenant)
    response = await db(services.create_response)(caller.tenant, create_request)
    if create_request.stream:
        on_disconnect = None if response.background else functools.partial(_cancel_by_id, response.pk)
        return sse_response(follow_events(response.pk, -1, on_disconnect=on_disconnect))
    if response.background:
        return JsonResponse(await db(selectors.render_response)(response))
    try:
        finished = await _wait_until_finished(response.pk)
    except asyncio.CancelledError:
        # The client hung up on a foreground response: nobody will read it.
        await db(_cancel_by_id)(response.pk)
        raise
    return JsonResponse(await db(selectors.render_response)(finished))


@openai_errors
async def response_detail(request: HttpRequest, caller: Caller, response_id: str) -> HttpResponse:
    if request.method == "DELETE":
        response = await db(selectors.get_response)(caller.tenant, response_id)
        await db(services.delete_response)(response)
        return JsonResponse({"id": response_id, "object": "response.deleted", "deleted": True})
    if request.method != "GET":
        raise _method_not_allowed(request)
    stream = _bool_query(request, "stream")
    starting_after = _int_query(request, "starting_after", minimum=-1)
    include = _include_query(request)
    response = await db(selectors.get_response)(caller.tenant, response_id)
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
    return sse_response(follow_events(response.pk, cursor))


@openai_errors
async def response_cancel(request: HttpRequest, caller: Caller, response_id: str) -> HttpResponse:
    if request.method != "POST":
        raise _method_not_allowed(request)
    response = await db(selectors.get_response)(caller.tenant, response_id)
    if not response.background:
        raise InvalidRequest("Only background responses can be cancelled.", param="response_id")
    response = await db(services.request_cancel)(response)
    if not response.is_terminal:
        # The worker honours the flag within a second; answer with the cancelled response
        # when it does, or with the response as it stands if the worker is slow.
        try:
            response = await asyncio.wait_for(_wait_until_finished(response.pk), timeout=CANCEL_WAIT_S)
        except TimeoutError:
            response = await db(Response.objects.get)(pk=response.pk)
    return JsonResponse(await db(selectors.render_response)(response))


def _cancel_by_id(response_id: str) -> None:
    response = Response.objects.filter(pk=response_id).first()
    if response is not None:
        services.request_cancel(response)


async def _wait_until_finished(response_id: str) -> Response:
    try:
        return await wait_until_finished(response_id)
    except ResponseGone:
        raise NotFound(f"Response with id '{response_id}' was deleted.", param="response_id") from None


def _method_not_allowed(request: HttpRequest) -> APIError:
    error = InvalidRequest(f"Method {request.method} is not allowed on {request.path}.")
    error.status_code = 405
    return error


def _bool_query(request: HttpRequest | Request, name: str) -> bool:
    value = request.GET.get(name)
    if value in (None, "", "false", "False", "0"):
        return False
    if value in ("true", "True", "1"):
        return True
    raise InvalidRequest(f"Invalid value for '{name}': {value!r}; expected true or false.", param=name)


def _int_query(request: HttpRequest | Request, name: str, minimum: int, maximum: int | None = None) -> int | None:
    value = request.GET.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise InvalidRequest(f"Invalid value for '{name}': {value!r}; expected an integer.", param=name) from None
    if number < minimum or (maximum is not None and number > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise InvalidRequest(f"'{name}' must be {bounds}, got {number}.", param=name)
    return number


def _include_query(request: HttpRequest | Request) -> list[str]:
    """What a retrieve adds to the stored request's ``include`` (a stream replays the events
    as they were written, with the request's own)."""
    values = request.GET.getlist("include[]") + request.GET.getlist("include")
    for value in values:
        if value not in SUPPORTED_INCLUDE_VALUES:
            raise InvalidRequest(f"include value {value!r} is not supported by this server yet.", param="include")
    return values


# --- DRF endpoints ---------------------------------------------------------------------------


class InputItemsView(APIView):
    def get(self, request: Request, response_id: str) -> DRFResponse:
        limit = _int_query(request, "limit", minimum=1, maximum=100) or 20
        order = request.query_params.get("order", "desc")
        if order not in ("asc", "desc"):
            raise InvalidRequest(f"Invalid value for 'order': {order!r}; expected 'asc' or 'desc'.", param="order")
        if _include_query(request):
            raise InvalidRequest("include is not supported for input items.", param="include")
        response = selectors.get_response(request.user.tenant, response_id)
        page = selectors.input_items_page(response, after=request.query_params.get("after"), limit=limit,
                                          order=order)
        return DRFResponse(page)


class ModelsView(APIView):
    def get(self, request: Request) -> DRFResponse:
        return DRFResponse({"object": "list", "data": [_model_object(model) for model in settings.MODEL_REGISTRY]})


class ModelDetailView(APIView):
    def get(self, request: Request, model_id: str) -> DRFResponse:
        if model_id not in settings.MODEL_REGISTRY:
            raise NotFound(f"The model '{model_id}' does not exist.", param="model", code="model_not_found")
        return DRFResponse(_model_object(model_id))


def _model_object(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "gpt-oss-responses"}
