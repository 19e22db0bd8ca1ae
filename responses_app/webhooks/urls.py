"""The webhook endpoints' and event types' endpoints under /v1 (api/urls.py includes them)."""

from __future__ import annotations

from django.urls import path

from responses_app.webhooks import views

urlpatterns = [
    path("webhook_endpoints", views.WebhookEndpointsView.as_view()),
    path("webhook_endpoints/<str:webhook_endpoint_id>", views.WebhookEndpointView.as_view()),
    path("webhook_endpoints/<str:webhook_endpoint_id>/rotate_secret", views.WebhookRotateSecretView.as_view()),
    path("webhook_endpoints/<str:webhook_endpoint_id>/test", views.WebhookTestView.as_view()),
    path("webhook_event_types", views.WebhookEventTypesView.as_view()),
]
