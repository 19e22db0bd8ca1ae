"""The containers' endpoints under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.containers import views

urlpatterns = [
    path("containers", views.ContainersView.as_view()),
    path("containers/<str:container_id>", views.ContainerView.as_view()),
    path("containers/<str:container_id>/files", views.ContainerFilesView.as_view()),
    path("containers/<str:container_id>/files/<str:file_id>", views.ContainerFileView.as_view()),
    path("containers/<str:container_id>/files/<str:file_id>/content", views.ContainerFileContentView.as_view()),
]
