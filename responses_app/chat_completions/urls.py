"""The Chat Completions endpoints under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.chat_completions import views

urlpatterns = [
    path("chat/completions", views.ChatCompletionsView.as_view()),
    path("chat/completions/<str:completion_id>", views.ChatCompletionView.as_view()),
    path("chat/completions/<str:completion_id>/messages", views.ChatCompletionMessagesView.as_view()),
]
