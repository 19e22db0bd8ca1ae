"""POST /v1/embeddings, as ``client.embeddings.create`` calls it."""

from __future__ import annotations

from django.http import HttpResponseBase, JsonResponse
from rest_framework.request import Request

from responses_app.embeddings import openapi
from responses_app.embeddings.create import create_embeddings
from responses_app.embeddings.requests import parse_embeddings_create
from responses_app.http.base import ApiView
from responses_app.http.params import json_body
from responses_app.lib.asyncdb import db


class EmbeddingsView(ApiView):
    @openapi.EMBEDDINGS_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        # A request thread: embedding a large input is CPU work that must not hold the event loop.
        return JsonResponse(await db(create_embeddings)(parse_embeddings_create(json_body(request))))
