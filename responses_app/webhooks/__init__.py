"""Webhooks: endpoints managed as the openai SDK's ``client.webhooks`` does, the outbox of
response.* events, and their signed, retried delivery."""
