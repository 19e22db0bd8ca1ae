from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

# Every task acknowledges its message best effort (responses_app/worker/delivery.py).
app = Celery("project", task_cls="responses_app.worker.delivery:BestEffortAckTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
