"""The Django admin is the operator console: the responses' and tenants' pages here, and each
capability's pages in its own package's admin.py, registered when this module is imported
(Django's autodiscovery imports it)."""

from responses_app.admin import responses, tenants
from responses_app.batches import admin as batches
from responses_app.chat_completions import admin as chat_completions
from responses_app.conversations import admin as conversations
from responses_app.files import admin as files
from responses_app.prompts import admin as prompts
from responses_app.schedules import admin as schedules
from responses_app.vector_stores import admin as vector_stores
from responses_app.webhooks import admin as webhooks

__all__ = ["batches", "chat_completions", "conversations", "files", "prompts", "responses", "schedules", "tenants",
           "vector_stores", "webhooks"]
