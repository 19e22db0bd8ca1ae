"""The embeddings' endpoint under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.embeddings import views

urlpatterns = [
    path("embeddings", views.EmbeddingsView.as_view()),
]
