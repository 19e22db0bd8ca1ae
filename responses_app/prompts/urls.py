"""The prompts' endpoints under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.prompts import views

urlpatterns = [
    path("prompts", views.PromptsView.as_view()),
    path("prompts/<str:prompt_id>", views.PromptView.as_view()),
    path("prompts/<str:prompt_id>/versions", views.PromptVersionsView.as_view()),
]
