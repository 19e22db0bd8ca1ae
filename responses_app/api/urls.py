"""Every endpoint under /v1, each an ApiView (api/base.py)."""

from __future__ import annotations

from django.urls import path

from responses_app.api import container_files, openapi, views

urlpatterns = [
    path("responses", views.ResponsesView.as_view()),
    path("responses/<str:response_id>", views.ResponseView.as_view()),
    path("responses/<str:response_id>/cancel", views.ResponseCancelView.as_view()),
    path("responses/<str:response_id>/input_items", views.InputItemsView.as_view()),
    path("models", views.ModelsView.as_view()),
    path("models/<str:model_id>", views.ModelView.as_view()),
    path("containers/<str:container_id>/files/<path:path>", container_files.ContainerFileContentView.as_view()),
    path("openapi.json", openapi.OpenApiDocumentView.as_view()),
]
