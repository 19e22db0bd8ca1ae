"""/v1/prompts: a tenant's prompt templates and their versions (responses_app/prompts)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase, JsonResponse
from drf_spectacular.utils import extend_schema_view
from rest_framework.request import Request

from responses_app.http.base import ApiView
from responses_app.http.params import json_body, known_query, page_params
from responses_app.http.resource import TenantObjectView
from responses_app.lib.asyncdb import db
from responses_app.models import Tenant
from responses_app.prompts import openapi, store
from responses_app.prompts.requests import parse_template


class PromptsView(ApiView):
    """POST (create) and GET (list) /v1/prompts"""

    @openapi.PROMPT_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        prompt = await db(store.create_prompt)(request.user.tenant, parse_template(json_body(request)))
        return JsonResponse(store.prompt_object(prompt))

    @openapi.PROMPT_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        after, limit, _ = page_params(request.query_params)
        return JsonResponse(await db(store.list_page)(request.user.tenant, after=after, limit=limit))


@extend_schema_view(get=openapi.PROMPT_RETRIEVE, post=openapi.PROMPT_NEW_VERSION, delete=openapi.PROMPT_DELETE)
class PromptView(TenantObjectView):
    """GET (a version), POST (a new version) and DELETE /v1/prompts/{id}"""

    id_param, deleted_object = "prompt_id", "prompt.deleted"

    async def get(self, request: Request, **path: str) -> HttpResponseBase:
        # A version of the prompt: ``?version=``, or its latest.
        known_query(request.query_params, ("version",))
        version = await db(store.get_version)(request.user.tenant, path[self.id_param],
                                              request.query_params.get("version"))
        return JsonResponse(store.prompt_object(version))

    def update(self, tenant: Tenant, object_id: str, body: Any) -> dict[str, Any]:
        return store.prompt_object(store.add_version(tenant, object_id, parse_template(body)))

    def destroy(self, tenant: Tenant, object_id: str) -> None:
        store.delete_prompt(tenant, object_id)


class PromptVersionsView(ApiView):
    """GET /v1/prompts/{id}/versions"""

    @openapi.PROMPT_VERSIONS
    async def get(self, request: Request, prompt_id: str) -> HttpResponseBase:
        known_query(request.query_params, ())
        return JsonResponse(await db(store.versions_list)(request.user.tenant, prompt_id))
