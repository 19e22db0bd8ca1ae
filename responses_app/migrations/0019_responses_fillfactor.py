"""Room on each page of the responses and output items tables for heap-only updates.

A streaming response's row is updated with every batch (its last sequence number) and its
open item's row every second; on PostgreSQL such an UPDATE is heap-only (no new entry in
any index) when no indexed column changes and the new row version fits on the same page.
The default fillfactor (100) leaves no room; 70 does. Nothing to do on SQLite."""

from django.db import migrations

TABLES = ("responses_app_response", "responses_app_outputitem")


def set_fillfactor(apps, schema_editor, value: int = 70) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {value})")


def reset_fillfactor(apps, schema_editor) -> None:
    set_fillfactor(apps, schema_editor, 100)


class Migration(migrations.Migration):
    dependencies = [("responses_app", "0018_vector_store_chunking")]

    operations = [migrations.RunPython(set_fillfactor, reset_fillfactor)]
