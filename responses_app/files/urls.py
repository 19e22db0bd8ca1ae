"""The Files API's endpoints under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.files import views

urlpatterns = [
    path("files", views.FilesView.as_view()),
    path("files/<str:file_id>", views.FileView.as_view()),
    path("files/<str:file_id>/content", views.FileContentView.as_view()),
]
