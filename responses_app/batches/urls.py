"""The batches' endpoints under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.batches import views

urlpatterns = [
    path("batches", views.BatchesView.as_view()),
    path("batches/<str:batch_id>", views.BatchView.as_view()),
    path("batches/<str:batch_id>/cancel", views.BatchCancelView.as_view()),
]
