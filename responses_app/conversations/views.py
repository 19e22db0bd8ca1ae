"""/v1/conversations and their items, as ``client.conversations`` calls them."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase, JsonResponse
from drf_spectacular.utils import extend_schema_view
from rest_framework.request import Request

from responses_app.conversations import openapi, store
from responses_app.conversations.requests import (
    parse_conversation_create,
    parse_conversation_update,
    parse_items_add,
)
from responses_app.http.base import ApiView
from responses_app.http.params import include_param, json_body, page_params
from responses_app.http.resource import TenantObjectView
from responses_app.lib.asyncdb import db
from responses_app.models import Tenant
from responses_app.wire.objects import conversation_item_object


class ConversationsView(ApiView):
    """POST /v1/conversations"""

    @openapi.CONVERSATION_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        metadata, items = parse_conversation_create(json_body(request))
        conversation = await db(store.create_conversation)(request.user.tenant, metadata, items)
        return JsonResponse(store.conversation_object(conversation))


@extend_schema_view(get=openapi.CONVERSATION_RETRIEVE, post=openapi.CONVERSATION_UPDATE,
                    delete=openapi.CONVERSATION_DELETE)
class ConversationView(TenantObjectView):
    """GET, POST (update) and DELETE /v1/conversations/{id}"""

    id_param, deleted_object = "conversation_id", "conversation.deleted"

    def retrieve(self, tenant: Tenant, object_id: str) -> dict[str, Any]:
        return store.conversation_object(store.get_conversation(tenant, object_id))

    def update(self, tenant: Tenant, object_id: str, body: Any) -> dict[str, Any]:
        metadata = parse_conversation_update(body)
        return store.conversation_object(store.update_conversation(tenant, object_id, metadata))

    def destroy(self, tenant: Tenant, object_id: str) -> None:
        store.delete_conversation(tenant, object_id)


class ConversationItemsView(ApiView):
    """POST (add) and GET (list) /v1/conversations/{id}/items"""

    @openapi.CONVERSATION_ITEMS_CREATE
    async def post(self, request: Request, conversation_id: str) -> HttpResponseBase:
        include = include_param(request.query_params)
        items = await db(store.add_items)(request.user.tenant, conversation_id, parse_items_add(json_body(request)))
        return JsonResponse(store.items_list(items, include))

    @openapi.CONVERSATION_ITEMS_LIST
    async def get(self, request: Request, conversation_id: str) -> HttpResponseBase:
        query = request.query_params
        after, limit, order = page_params(query, orders=True, extra=("include", "include[]"))
        page = await db(store.items_page)(request.user.tenant, conversation_id, after=after, limit=limit, order=order,
                                          include=include_param(query, "after", "limit", "order"))
        return JsonResponse(page)


class ConversationItemView(ApiView):
    """GET and DELETE /v1/conversations/{id}/items/{item_id}"""

    @openapi.CONVERSATION_ITEM_RETRIEVE
    async def get(self, request: Request, conversation_id: str, item_id: str) -> HttpResponseBase:
        include = include_param(request.query_params)
        item = await db(store.get_item)(request.user.tenant, conversation_id, item_id)
        return JsonResponse(conversation_item_object(item.data, include))

    @openapi.CONVERSATION_ITEM_DELETE
    async def delete(self, request: Request, conversation_id: str, item_id: str) -> HttpResponseBase:
        conversation = await db(store.delete_item)(request.user.tenant, conversation_id, item_id)
        return JsonResponse(store.conversation_object(conversation))
