from __future__ import annotations

from django.urls import path

from responses_app.api import container_files
from responses_app.api import views as api

urlpatterns = [
    path("responses", api.responses_collection),
    path("responses/<str:response_id>", api.response_detail),
    path("responses/<str:response_id>/cancel", api.response_cancel),
    path("responses/<str:response_id>/input_items", api.InputItemsView.as_view()),
    path("models", api.ModelsView.as_view()),
    path("models/<str:model_id>", api.ModelDetailView.as_view()),
    path("containers/<str:container_id>/files/<path:path>", container_files.ContainerFileContentView.as_view()),
]
