"""Every endpoint under /v1, each an ApiView (http/base.py)."""

from __future__ import annotations

from django.urls import path

from responses_app.api import (
    batches,
    containers,
    conversations,
    embeddings,
    files,
    openapi,
    prompts,
    scheduled_responses,
    views,
    webhooks,
)
from responses_app.vector_stores import urls as vector_store_urls

urlpatterns = [
    path("responses", views.ResponsesView.as_view()),
    # Before responses/<id>, which would take "input_tokens" or "compact" for an id.
    path("responses/input_tokens", views.InputTokensView.as_view()),
    path("responses/compact", views.CompactView.as_view()),
    path("responses/<str:response_id>", views.ResponseView.as_view()),
    path("responses/<str:response_id>/cancel", views.ResponseCancelView.as_view()),
    path("responses/<str:response_id>/input_items", views.InputItemsView.as_view()),
    path("conversations", conversations.ConversationsView.as_view()),
    path("conversations/<str:conversation_id>", conversations.ConversationView.as_view()),
    path("conversations/<str:conversation_id>/items", conversations.ConversationItemsView.as_view()),
    path("conversations/<str:conversation_id>/items/<str:item_id>", conversations.ConversationItemView.as_view()),
    path("embeddings", embeddings.EmbeddingsView.as_view()),
    path("models", views.ModelsView.as_view()),
    path("models/<str:model_id>", views.ModelView.as_view()),
    path("files", files.FilesView.as_view()),
    path("files/<str:file_id>", files.FileView.as_view()),
    path("files/<str:file_id>/content", files.FileContentView.as_view()),
    path("batches", batches.BatchesView.as_view()),
    path("batches/<str:batch_id>", batches.BatchView.as_view()),
    path("batches/<str:batch_id>/cancel", batches.BatchCancelView.as_view()),
    path("containers", containers.ContainersView.as_view()),
    path("containers/<str:container_id>", containers.ContainerView.as_view()),
    path("containers/<str:container_id>/files", containers.ContainerFilesView.as_view()),
    path("containers/<str:container_id>/files/<str:file_id>", containers.ContainerFileView.as_view()),
    path("containers/<str:container_id>/files/<str:file_id>/content", containers.ContainerFileContentView.as_view()),
    path("webhook_endpoints", webhooks.WebhookEndpointsView.as_view()),
    path("webhook_endpoints/<str:webhook_endpoint_id>", webhooks.WebhookEndpointView.as_view()),
    path("webhook_endpoints/<str:webhook_endpoint_id>/rotate_secret", webhooks.WebhookRotateSecretView.as_view()),
    path("webhook_endpoints/<str:webhook_endpoint_id>/test", webhooks.WebhookTestView.as_view()),
    path("webhook_event_types", webhooks.WebhookEventTypesView.as_view()),
    path("scheduled_responses", scheduled_responses.ScheduledResponsesView.as_view()),
    path("scheduled_responses/<str:scheduled_response_id>", scheduled_responses.ScheduledResponseView.as_view()),
    path("scheduled_responses/<str:scheduled_response_id>/runs", scheduled_responses.ScheduledRunsView.as_view()),
    path("prompts", prompts.PromptsView.as_view()),
    path("prompts/<str:prompt_id>", prompts.PromptView.as_view()),
    path("prompts/<str:prompt_id>/versions", prompts.PromptVersionsView.as_view()),
    *vector_store_urls.urlpatterns,
    path("openapi.json", openapi.OpenApiDocumentView.as_view()),
]
