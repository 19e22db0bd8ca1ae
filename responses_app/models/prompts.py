"""Prompt templates: a tenant's prompts, each a series of immutable versions, which a
create names in ``prompt: {id, version, variables}`` (responses_app/prompts)."""

from __future__ import annotations

from django.db import models

from responses_app.lib.ids import new_id
from responses_app.models.responses import Tenant


def new_prompt_id() -> str:
    return new_id("pmpt")


class PromptVersion(models.Model):
    """One version of a prompt: its instructions and input, with ``{{name}}`` variables."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="prompt_versions")
    prompt_id = models.CharField(max_length=64, default=new_prompt_id)
    version = models.PositiveIntegerField()
    instructions = models.TextField(blank=True)
    input = models.JSONField(default=list, blank=True)  # message items, as a create's input
    variables = models.JSONField(default=list)  # the names the templates use, in order of appearance
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "prompt_id", "version"],
                                               name="prompt_version_unique")]
        indexes = [models.Index(fields=["tenant", "prompt_id", "-version"])]

    def __str__(self) -> str:
        return f"{self.prompt_id} v{self.version}"
