"""The scheduled responses' endpoints under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.schedules import views

urlpatterns = [
    path("scheduled_responses", views.ScheduledResponsesView.as_view()),
    path("scheduled_responses/<str:scheduled_response_id>", views.ScheduledResponseView.as_view()),
    path("scheduled_responses/<str:scheduled_response_id>/runs", views.ScheduledRunsView.as_view()),
]
