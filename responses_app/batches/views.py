"""The Batch API: POST/GET /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel."""

from __future__ import annotations

from django.http import HttpResponseBase, JsonResponse
from rest_framework.request import Request

from responses_app.batches import openapi, store
from responses_app.batches.objects import batch_object
from responses_app.batches.requests import parse_batch_create
from responses_app.http.base import ApiView
from responses_app.http.params import json_body, page_params
from responses_app.lib.asyncdb import db
from responses_app.wire.objects import list_object


class BatchesView(ApiView):
    @openapi.BATCH_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        batch = await db(store.create_batch)(request.user.tenant, parse_batch_create(json_body(request)))
        return JsonResponse(batch_object(batch))

    @openapi.BATCH_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        after, limit, _ = page_params(request.query_params)
        page, more = await db(store.batches_page)(request.user.tenant, after=after, limit=limit)
        return JsonResponse(list_object([batch_object(batch) for batch in page], more))


class BatchView(ApiView):
    @openapi.BATCH_RETRIEVE
    async def get(self, request: Request, batch_id: str) -> HttpResponseBase:
        return JsonResponse(batch_object(await db(store.get_batch)(request.user.tenant, batch_id)))


class BatchCancelView(ApiView):
    @openapi.BATCH_CANCEL
    async def post(self, request: Request, batch_id: str) -> HttpResponseBase:
        return JsonResponse(batch_object(await db(store.cancel_batch)(request.user.tenant, batch_id)))
