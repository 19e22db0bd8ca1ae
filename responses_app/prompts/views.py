"""/v1/prompts: a tenant's prompt templates and their versions (responses_app/prompts)."""

from __future__ import annotations

from django.http import HttpResponseBase, JsonResponse
from rest_framework.request import Request

from responses_app.http.base import ApiView
from responses_app.http.params import json_body, known_query, page_params
from responses_app.lib.asyncdb import db
from responses_app.prompts import openapi, store


class PromptsView(ApiView):
    """POST (create) and GET (list) /v1/prompts"""

    @openapi.PROMPT_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        return JsonResponse(store.prompt_object(await db(store.create_prompt)(request.user.tenant, json_body(request))))

    @openapi.PROMPT_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        after, limit, _ = page_params(request.query_params)
        return JsonResponse(await db(store.list_page)(request.user.tenant, after=after, limit=limit))


class PromptView(ApiView):
    """GET (a version), POST (a new version) and DELETE /v1/prompts/{id}"""

    @openapi.PROMPT_RETRIEVE
    async def get(self, request: Request, prompt_id: str) -> HttpResponseBase:
        known_query(request.query_params, ("version",))
        version = await db(store.get_version)(request.user.tenant, prompt_id, request.query_params.get("version"))
        return JsonResponse(store.prompt_object(version))

    @openapi.PROMPT_NEW_VERSION
    async def post(self, request: Request, prompt_id: str) -> HttpResponseBase:
        version = await db(store.add_version)(request.user.tenant, prompt_id, json_body(request))
        return JsonResponse(store.prompt_object(version))

    @openapi.PROMPT_DELETE
    async def delete(self, request: Request, prompt_id: str) -> HttpResponseBase:
        await db(store.delete_prompt)(request.user.tenant, prompt_id)
        return JsonResponse({"id": prompt_id, "object": "prompt.deleted", "deleted": True})


class PromptVersionsView(ApiView):
    """GET /v1/prompts/{id}/versions"""

    @openapi.PROMPT_VERSIONS
    async def get(self, request: Request, prompt_id: str) -> HttpResponseBase:
        known_query(request.query_params, ())
        return JsonResponse(await db(store.versions_list)(request.user.tenant, prompt_id))
