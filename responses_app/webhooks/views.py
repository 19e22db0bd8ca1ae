"""/v1/webhook_endpoints and /v1/webhook_event_types, as ``client.webhooks`` calls them."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase, JsonResponse
from drf_spectacular.utils import extend_schema_view
from rest_framework.request import Request

from responses_app.http.base import ApiView
from responses_app.http.params import json_body, page_params
from responses_app.http.resource import TenantObjectView
from responses_app.lib.asyncdb import db
from responses_app.models import Tenant, WebhookEndpoint
from responses_app.webhooks import endpoints, openapi
from responses_app.webhooks.outbox import EVENT_TYPES
from responses_app.webhooks.requests import parse_endpoint_fields, parse_keep_old_secret, parse_test_event_type


class WebhookEndpointsView(ApiView):
    """POST (create) and GET (list) /v1/webhook_endpoints"""

    @openapi.WEBHOOK_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        endpoint = await db(_create)(request.user.tenant, json_body(request))
        return JsonResponse(endpoints.endpoint_object(endpoint, with_secret=True))

    @openapi.WEBHOOK_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        after, limit, _ = page_params(request.query_params)
        page = await db(endpoints.list_page)(request.user.tenant, after=after, limit=limit)
        return JsonResponse(page)


def _create(tenant: Tenant, body: Any) -> WebhookEndpoint:
    # In a request thread: the URL guard resolves the host, which blocks.
    return endpoints.create_endpoint(tenant, parse_endpoint_fields(body, required=True))


@extend_schema_view(get=openapi.WEBHOOK_RETRIEVE, post=openapi.WEBHOOK_UPDATE, delete=openapi.WEBHOOK_DELETE)
class WebhookEndpointView(TenantObjectView):
    """GET, POST (update) and DELETE /v1/webhook_endpoints/{id}"""

    id_param, deleted_object = "webhook_endpoint_id", "webhook_endpoint.deleted"

    def retrieve(self, tenant: Tenant, object_id: str) -> dict[str, Any]:
        return endpoints.endpoint_object(endpoints.get_endpoint(tenant, object_id))

    def update(self, tenant: Tenant, object_id: str, body: Any) -> dict[str, Any]:
        endpoint = endpoints.update_endpoint(tenant, object_id, parse_endpoint_fields(body, required=False))
        return endpoints.endpoint_object(endpoint)

    def destroy(self, tenant: Tenant, object_id: str) -> None:
        endpoints.delete_endpoint(tenant, object_id)


class WebhookRotateSecretView(ApiView):
    """POST /v1/webhook_endpoints/{id}/rotate_secret"""

    @openapi.WEBHOOK_ROTATE_SECRET
    async def post(self, request: Request, webhook_endpoint_id: str) -> HttpResponseBase:
        keep = parse_keep_old_secret(json_body(request))
        endpoint = await db(endpoints.rotate_secret)(request.user.tenant, webhook_endpoint_id, keep)
        return JsonResponse(endpoints.endpoint_object(endpoint, with_secret=True))


class WebhookTestView(ApiView):
    """POST /v1/webhook_endpoints/{id}/test"""

    @openapi.WEBHOOK_TEST
    async def post(self, request: Request, webhook_endpoint_id: str) -> HttpResponseBase:
        event_type = parse_test_event_type(json_body(request))
        result = await endpoints.send_test(request.user.tenant, webhook_endpoint_id, event_type)
        return JsonResponse(result)


class WebhookEventTypesView(ApiView):
    """GET /v1/webhook_event_types"""

    @openapi.WEBHOOK_EVENT_TYPES
    async def get(self, request: Request) -> HttpResponseBase:
        return JsonResponse({"object": "list", "data": list(EVENT_TYPES)})
