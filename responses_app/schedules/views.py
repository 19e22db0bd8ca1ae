"""/v1/scheduled_responses: an extension of this server (no SDK resource), in OpenAI's
list and error shapes; the SDK reaches it with ``client.get/post/delete``."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase, JsonResponse
from drf_spectacular.utils import extend_schema_view
from rest_framework.request import Request

from responses_app.http.base import ApiView
from responses_app.http.params import json_body, page_params
from responses_app.http.resource import TenantObjectView
from responses_app.lib.asyncdb import db
from responses_app.models import Tenant
from responses_app.schedules import openapi, service
from responses_app.schedules.requests import parse_schedule_fields


class ScheduledResponsesView(ApiView):
    """POST (create) and GET (list) /v1/scheduled_responses"""

    @openapi.SCHEDULE_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        fields = parse_schedule_fields(json_body(request), required=True)
        schedule = await db(service.create_schedule)(request.user.tenant, fields)
        return JsonResponse(await db(service.schedule_object)(schedule))

    @openapi.SCHEDULE_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        after, limit, order = page_params(request.query_params, orders=True)
        page = await db(service.list_page)(request.user.tenant, after=after, limit=limit, order=order)
        return JsonResponse(page)


@extend_schema_view(get=openapi.SCHEDULE_RETRIEVE, post=openapi.SCHEDULE_UPDATE, delete=openapi.SCHEDULE_DELETE)
class ScheduledResponseView(TenantObjectView):
    """GET, POST (update) and DELETE /v1/scheduled_responses/{id}"""

    id_param, deleted_object = "scheduled_response_id", "scheduled_response.deleted"

    def retrieve(self, tenant: Tenant, object_id: str) -> dict[str, Any]:
        return service.schedule_object(service.get_schedule(tenant, object_id))

    def update(self, tenant: Tenant, object_id: str, body: Any) -> dict[str, Any]:
        schedule = service.update_schedule(tenant, object_id, parse_schedule_fields(body, required=False))
        return service.schedule_object(schedule)

    def destroy(self, tenant: Tenant, object_id: str) -> None:
        service.delete_schedule(tenant, object_id)


class ScheduledRunsView(ApiView):
    """GET /v1/scheduled_responses/{id}/runs: the responses it created, newest first."""

    @openapi.SCHEDULE_RUNS
    async def get(self, request: Request, scheduled_response_id: str) -> HttpResponseBase:
        after, limit, _ = page_params(request.query_params)
        page = await db(service.runs_page)(request.user.tenant, scheduled_response_id, after=after, limit=limit)
        return JsonResponse(page)
