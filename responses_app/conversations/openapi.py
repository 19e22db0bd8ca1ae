"""The conversations' operations in the OpenAPI document: the SDK's types they take and
answer, the links a create's answer offers, and each operation's declaration (views.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from openai.types.conversations import (
    Conversation,
    ConversationDeletedResource,
    ConversationItem,
    ConversationItemList,
)
from openai.types.conversations.conversation_create_params import ConversationCreateParams
from openai.types.conversations.conversation_update_params import ConversationUpdateParams
from openai.types.conversations.item_create_params import ItemCreateParams

from responses_app.http.openapi import INCLUDE, ORDER, PAGE, Links, SdkTypes, ref

SDK_TYPES: SdkTypes = (
    ("Conversation", Conversation, "serialization"),
    ("ConversationDeletedResource", ConversationDeletedResource, "serialization"),
    ("ConversationItem", ConversationItem, "serialization"),
    ("ConversationItemList", ConversationItemList, "serialization"),
    ("ConversationCreateParams", ConversationCreateParams, "validation"),
    ("ConversationUpdateParams", ConversationUpdateParams, "validation"),
    ("ConversationItemCreateParams", ItemCreateParams, "validation"),
)
LINKS: Links = {
    "createConversation": ({"conversation_id": "$response.body#/id"},
                           ("retrieveConversation", "updateConversation", "createConversationItems",
                            "listConversationItems", "deleteConversation")),
    "createConversationItems": ({"conversation_id": "$request.path.conversation_id",
                                 "item_id": "$response.body#/data/0/id"},
                                ("retrieveConversationItem", "deleteConversationItem")),
}


CONVERSATION_CREATE = extend_schema(
    operation_id="createConversation", summary="Create a conversation",
    request={"application/json": ref("ConversationCreateParams")},
    examples=[OpenApiExample("A thread", request_only=True,
                             value={"metadata": {"topic": "travel"}, "items": [{"role": "user", "content": "Hi."}]})],
    responses={200: OpenApiResponse(ref("Conversation"))})
CONVERSATION_RETRIEVE = extend_schema(operation_id="retrieveConversation", summary="Retrieve a conversation",
                                      responses={200: OpenApiResponse(ref("Conversation"))})
CONVERSATION_UPDATE = extend_schema(
    operation_id="updateConversation", summary="Update a conversation's metadata",
    request={"application/json": ref("ConversationUpdateParams")},
    responses={200: OpenApiResponse(ref("Conversation"))})
CONVERSATION_DELETE = extend_schema(operation_id="deleteConversation", summary="Delete a conversation and its items",
                                    responses={200: OpenApiResponse(ref("ConversationDeletedResource"))})
CONVERSATION_ITEMS_CREATE = extend_schema(
    operation_id="createConversationItems", summary="Add up to 20 items to a conversation", parameters=[INCLUDE],
    request={"application/json": ref("ConversationItemCreateParams")},
    examples=[OpenApiExample("A message", request_only=True,
                             value={"items": [{"type": "message", "role": "user", "content": "And then?"}]})],
    responses={200: OpenApiResponse(ref("ConversationItemList"))})
CONVERSATION_ITEMS_LIST = extend_schema(
    operation_id="listConversationItems", summary="List a conversation's items",
    parameters=[*PAGE, ORDER, INCLUDE],
    responses={200: OpenApiResponse(ref("ConversationItemList"))})
CONVERSATION_ITEM_RETRIEVE = extend_schema(
    operation_id="retrieveConversationItem", summary="Retrieve an item of a conversation", parameters=[INCLUDE],
    responses={200: OpenApiResponse(ref("ConversationItem"))})
CONVERSATION_ITEM_DELETE = extend_schema(
    operation_id="deleteConversationItem", summary="Delete an item of a conversation",
    responses={200: OpenApiResponse(ref("Conversation"))})
