"""Repair what was stored before every write was checked to render.

Input and conversation items (validation/create.py ``_servable``): an assistant message
given as a string was stored with ``output_text`` parts that lack ``annotations``, and on
SQLite a lone surrogate could be stored in any text; both are mended in place.
Schedules (schedules/beat_entries.py): on PostgreSQL an ``at`` whose UTC time is past the
year 9999 was stored, and no row of its beat entry could be read again; such schedules
lose their beat entry and are disabled (they could never fire)."""

from __future__ import annotations

import re
from typing import Any

from django.db import migrations

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def repaired(value: Any) -> Any:
    """``value`` with unstorable characters replaced (U+FFFD) and every ``output_text``
    part given the lists the SDK requires."""
    if isinstance(value, str):
        return UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, list):
        return [repaired(child) for child in value]
    if isinstance(value, dict):
        fixed = {repaired(key): repaired(child) for key, child in value.items()}
        if fixed.get("type") == "output_text":
            fixed.setdefault("annotations", [])
            fixed.setdefault("logprobs", [])
        return fixed
    return value


def repair_items(apps: Any, schema_editor: Any) -> None:
    for model_name in ("InputItem", "ConversationItem"):
        model = apps.get_model("responses_app", model_name)
        for row in model.objects.only("pk", "data").iterator(chunk_size=500):
            data = repaired(row.data)
            if data != row.data:
                model.objects.filter(pk=row.pk).update(data=data)


def repair_schedules(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite kept the offset as given and reads such a time back
    unreadable_tasks = ("SELECT id FROM django_celery_beat_periodictask WHERE clocked_id IN "
                        "(SELECT id FROM django_celery_beat_clockedschedule WHERE clocked_time >= '10000-01-01')")
    schema_editor.execute("UPDATE responses_app_scheduledresponse SET periodic_task_id = NULL, enabled = false "
                          f"WHERE periodic_task_id IN ({unreadable_tasks})")
    schema_editor.execute(f"DELETE FROM django_celery_beat_periodictask WHERE id IN ({unreadable_tasks})")
    schema_editor.execute("DELETE FROM django_celery_beat_clockedschedule WHERE clocked_time >= '10000-01-01'")


class Migration(migrations.Migration):
    dependencies = [("responses_app", "0006_conversations_and_truncation"),
                    ("django_celery_beat", "0019_alter_periodictasks_options")]

    operations = [migrations.RunPython(repair_items, migrations.RunPython.noop),
                  migrations.RunPython(repair_schedules, migrations.RunPython.noop)]
