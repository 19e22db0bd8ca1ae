"""/v1/scheduled_responses: an extension of this server (no SDK resource), in OpenAI's
list and error shapes; the SDK reaches it with ``client.get/post/delete``."""

from __future__ import annotations

from django.http import HttpResponseBase, JsonResponse
from rest_framework.request import Request

from responses_app.http.base import ApiView
from responses_app.http.params import json_body, page_params
from responses_app.lib.asyncdb import db
from responses_app.schedules import openapi, service


class ScheduledResponsesView(ApiView):
    """POST (create) and GET (list) /v1/scheduled_responses"""

    @openapi.SCHEDULE_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        schedule = await db(service.create_schedule)(request.user.tenant, json_body(request))
        return JsonResponse(await db(service.schedule_object)(schedule))

    @openapi.SCHEDULE_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        after, limit, order = page_params(request.query_params, orders=True)
        page = await db(service.list_page)(request.user.tenant, after=after, limit=limit, order=order)
        return JsonResponse(page)


class ScheduledResponseView(ApiView):
    """GET, POST (update) and DELETE /v1/scheduled_responses/{id}"""

    @openapi.SCHEDULE_RETRIEVE
    async def get(self, request: Request, scheduled_response_id: str) -> HttpResponseBase:
        schedule = await db(service.get_schedule)(request.user.tenant, scheduled_response_id)
        return JsonResponse(await db(service.schedule_object)(schedule))

    @openapi.SCHEDULE_UPDATE
    async def post(self, request: Request, scheduled_response_id: str) -> HttpResponseBase:
        schedule = await db(service.update_schedule)(request.user.tenant, scheduled_response_id, json_body(request))
        return JsonResponse(await db(service.schedule_object)(schedule))

    @openapi.SCHEDULE_DELETE
    async def delete(self, request: Request, scheduled_response_id: str) -> HttpResponseBase:
        await db(service.delete_schedule)(request.user.tenant, scheduled_response_id)
        return JsonResponse({"id": scheduled_response_id, "object": "scheduled_response.deleted", "deleted": True})


class ScheduledRunsView(ApiView):
    """GET /v1/scheduled_responses/{id}/runs: the responses it created, newest first."""

    @openapi.SCHEDULE_RUNS
    async def get(self, request: Request, scheduled_response_id: str) -> HttpResponseBase:
        after, limit, _ = page_params(request.query_params)
        page = await db(service.runs_page)(request.user.tenant, scheduled_response_id, after=after, limit=limit)
        return JsonResponse(page)
