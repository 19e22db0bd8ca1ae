from __future__ import annotations

from django.urls import path

from . import api

urlpatterns = [
    path("containers/<str:container_id>/files/<path:path>", api.ContainerFileContentView.as_view()),
]
