"""The webhook endpoints' operations in the OpenAPI document: the SDK's types they take and
answer, the links a create's answer offers, and each operation's declaration (views.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from openai.types.webhooks import (
    DeletedWebhookEndpoint,
    WebhookEndpoint,
    WebhookEndpointList,
    WebhookEndpointTestResult,
    WebhookEndpointWithSecret,
    WebhookEventTypeList,
)
from openai.types.webhooks.webhook_create_params import WebhookCreateParams
from openai.types.webhooks.webhook_rotate_secret_params import WebhookRotateSecretParams
from openai.types.webhooks.webhook_test_params import WebhookTestParams
from openai.types.webhooks.webhook_update_params import WebhookUpdateParams

from responses_app.http.openapi import PAGE, Links, SdkTypes, ref

SDK_TYPES: SdkTypes = (
    ("WebhookEndpoint", WebhookEndpoint, "serialization"),
    ("WebhookEndpointWithSecret", WebhookEndpointWithSecret, "serialization"),
    ("WebhookEndpointList", WebhookEndpointList, "serialization"),
    ("WebhookEndpointTestResult", WebhookEndpointTestResult, "serialization"),
    ("WebhookEventTypeList", WebhookEventTypeList, "serialization"),
    ("DeletedWebhookEndpoint", DeletedWebhookEndpoint, "serialization"),
    ("WebhookCreateParams", WebhookCreateParams, "validation"),
    ("WebhookUpdateParams", WebhookUpdateParams, "validation"),
    ("WebhookRotateSecretParams", WebhookRotateSecretParams, "validation"),
    ("WebhookTestParams", WebhookTestParams, "validation"),
)
LINKS: Links = {
    "createWebhookEndpoint": ({"webhook_endpoint_id": "$response.body#/id"},
                              ("retrieveWebhookEndpoint", "updateWebhookEndpoint", "rotateWebhookEndpointSecret",
                               "testWebhookEndpoint", "deleteWebhookEndpoint")),
}


WEBHOOK_CREATE = extend_schema(operation_id="createWebhookEndpoint", summary="Create a webhook endpoint",
                               request={"application/json": ref("WebhookCreateParams")},
                               responses={200: OpenApiResponse(ref("WebhookEndpointWithSecret"))})
WEBHOOK_LIST = extend_schema(operation_id="listWebhookEndpoints", summary="List webhook endpoints",
                             parameters=PAGE, responses={200: OpenApiResponse(ref("WebhookEndpointList"))})
WEBHOOK_RETRIEVE = extend_schema(operation_id="retrieveWebhookEndpoint", summary="Retrieve a webhook endpoint",
                                 responses={200: OpenApiResponse(ref("WebhookEndpoint"))})
WEBHOOK_UPDATE = extend_schema(operation_id="updateWebhookEndpoint", summary="Update a webhook endpoint",
                               request={"application/json": ref("WebhookUpdateParams")},
                               responses={200: OpenApiResponse(ref("WebhookEndpoint"))})
WEBHOOK_DELETE = extend_schema(operation_id="deleteWebhookEndpoint", summary="Delete a webhook endpoint",
                               responses={200: OpenApiResponse(ref("DeletedWebhookEndpoint"))})
WEBHOOK_ROTATE_SECRET = extend_schema(
    operation_id="rotateWebhookEndpointSecret", summary="Rotate a webhook endpoint's signing secret",
    request={"application/json": ref("WebhookRotateSecretParams")},
    responses={200: OpenApiResponse(ref("WebhookEndpointWithSecret"))})
WEBHOOK_TEST = extend_schema(operation_id="testWebhookEndpoint", summary="Send a sample event to a webhook endpoint",
                             request={"application/json": ref("WebhookTestParams")},
                             responses={200: OpenApiResponse(ref("WebhookEndpointTestResult"))})
WEBHOOK_EVENT_TYPES = extend_schema(operation_id="listWebhookEventTypes", summary="List the webhook event types",
                                    responses={200: OpenApiResponse(ref("WebhookEventTypeList"))})
