"""Scheduled responses: a stored create request that django-celery-beat runs on a schedule."""

from __future__ import annotations

from django.db import models
from django_celery_beat.models import PeriodicTask

from responses_app.lib.ids import new_id
from responses_app.models.responses import Response, Tenant


def new_schedule_id() -> str:
    return new_id("sched")


class ScheduledResponse(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_schedule_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="scheduled_responses")
    name = models.CharField(max_length=256)
    # The body of a POST /v1/responses, as the client gave it (validated when saved and
    # again at every run: a model or a previous response may be gone by then).
    request = models.JSONField()
    # As the client gave it: {"cron", "timezone"} | {"every_seconds"} | {"at"}.
    schedule = models.JSONField()
    enabled = models.BooleanField(default=True)
    # The beat entry that fires it (its enabled flag follows ``enabled``).
    periodic_task = models.OneToOneField(PeriodicTask, null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="scheduled_response")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "-created_at"])]

    def __str__(self) -> str:
        return self.name


class RunStatus(models.TextChoices):
    CREATED = "created"
    SKIPPED = "skipped"


class ScheduledRun(models.Model):
    """One firing of a schedule: the background response it created, or why it created none."""

    scheduled_response = models.ForeignKey(ScheduledResponse, on_delete=models.CASCADE, related_name="runs")
    # The schedule's tick this run is for; unique, so that no tick runs twice.
    tick = models.DateTimeField()
    status = models.CharField(max_length=16, choices=RunStatus.choices)
    response = models.ForeignKey(Response, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=500, blank=True)
    manual = models.BooleanField(default=False, help_text="Started with the admin's “run now”.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scheduled_response", "tick"], name="scheduled_run_tick_unique")]
        indexes = [models.Index(fields=["scheduled_response", "-created_at"])]
        ordering = ["-created_at"]
