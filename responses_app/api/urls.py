"""Every endpoint under /v1, each an ApiView (http/base.py)."""

from __future__ import annotations

from django.urls import path

from responses_app.api import (
    openapi,
    views,
)
from responses_app.batches import urls as batch_urls
from responses_app.chat_completions import urls as chat_completion_urls
from responses_app.containers import urls as container_urls
from responses_app.conversations import urls as conversation_urls
from responses_app.embeddings import urls as embedding_urls
from responses_app.files import urls as file_urls
from responses_app.prompts import urls as prompt_urls
from responses_app.schedules import urls as schedule_urls
from responses_app.vector_stores import urls as vector_store_urls
from responses_app.webhooks import urls as webhook_urls

urlpatterns = [
    path("responses", views.ResponsesView.as_view()),
    # Before responses/<id>, which would take "input_tokens" or "compact" for an id.
    path("responses/input_tokens", views.InputTokensView.as_view()),
    path("responses/compact", views.CompactView.as_view()),
    path("responses/<str:response_id>", views.ResponseView.as_view()),
    path("responses/<str:response_id>/cancel", views.ResponseCancelView.as_view()),
    path("responses/<str:response_id>/input_items", views.InputItemsView.as_view()),
    *chat_completion_urls.urlpatterns,
    *conversation_urls.urlpatterns,
    *embedding_urls.urlpatterns,
    path("models", views.ModelsView.as_view()),
    path("models/<str:model_id>", views.ModelView.as_view()),
    *file_urls.urlpatterns,
    *batch_urls.urlpatterns,
    *container_urls.urlpatterns,
    *webhook_urls.urlpatterns,
    *schedule_urls.urlpatterns,
    *prompt_urls.urlpatterns,
    *vector_store_urls.urlpatterns,
    path("openapi.json", openapi.OpenApiDocumentView.as_view()),
]
