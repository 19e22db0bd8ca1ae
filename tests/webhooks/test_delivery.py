"""One attempt of a webhook delivery, with the POST (the network) stood in for."""

from __future__ import annotations

from django.utils import timezone

from responses_app.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from responses_app.webhooks import delivery as webhook_delivery


def test_an_endpoint_deleted_during_the_post_ends_the_attempt_without_an_error(tenant, monkeypatch):
    endpoint = WebhookEndpoint.objects.create(tenant=tenant, name="gone", url="https://hooks.example.com/",
                                              signing_secret="whsec_c2VjcmV0")
    queued = WebhookDelivery.objects.create(endpoint=endpoint, event_type="response.completed", payload="{}",
                                            next_attempt_at=timezone.now(), queued_at=timezone.now())

    def post_while_the_endpoint_is_deleted(delivery: WebhookDelivery) -> WebhookAttempt:
        WebhookEndpoint.objects.filter(pk=endpoint.pk).delete()
        return WebhookAttempt(delivery=delivery, status_code=200, latency_ms=3)

    monkeypatch.setattr(webhook_delivery, "post", post_while_the_endpoint_is_deleted)
    webhook_delivery.deliver(queued.pk)
    assert not WebhookDelivery.objects.filter(pk=queued.pk).exists()
    assert not WebhookAttempt.objects.filter(delivery_id=queued.pk).exists()
