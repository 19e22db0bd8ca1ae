"""Celery tasks of the tools: thin wrappers around the services."""

from __future__ import annotations

from celery import shared_task

from tools_app import containers


@shared_task(name="tools_app.tasks.expire_idle_containers")
def expire_idle_containers() -> int:
    return containers.expire_idle_containers()
