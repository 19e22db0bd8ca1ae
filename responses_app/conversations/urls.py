"""The conversations' endpoints under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.conversations import views

urlpatterns = [
    path("conversations", views.ConversationsView.as_view()),
    path("conversations/<str:conversation_id>", views.ConversationView.as_view()),
    path("conversations/<str:conversation_id>/items", views.ConversationItemsView.as_view()),
    path("conversations/<str:conversation_id>/items/<str:item_id>", views.ConversationItemView.as_view()),
]
