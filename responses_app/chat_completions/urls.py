"""The Chat Completions endpoint under /v1 (api/urls.py includes it)."""

from __future__ import annotations

from django.urls import path

from responses_app.chat_completions import views

urlpatterns = [
    path("chat/completions", views.ChatCompletionsView.as_view()),
]
