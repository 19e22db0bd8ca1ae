from __future__ import annotations

from django.db import models


class McpTransport(models.TextChoices):
    STREAMABLE_HTTP = "streamable_http", "Streamable HTTP"
    SSE = "sse", "SSE"


class McpServer(models.Model):
    """An MCP server registered by an operator: requests name it by ``server_label`` alone
    and never see its URL's secrets (``headers``)."""

    label = models.SlugField(max_length=64, unique=True)
    server_url = models.URLField(max_length=500)
    transport = models.CharField(max_length=32, choices=McpTransport.choices, default=McpTransport.STREAMABLE_HTTP)
    headers = models.JSONField(default=dict, blank=True, help_text="Sent on every request, e.g. Authorization.")
    description = models.TextField(blank=True)
    # Empty: every tenant may use it.
    tenants = models.ManyToManyField("responses_app.Tenant", blank=True, related_name="mcp_servers")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.label
