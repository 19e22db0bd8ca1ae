from __future__ import annotations

from datetime import datetime

from django.core.management.base import BaseCommand, CommandError

from responses_app.models import ApiKey, Tenant

COLUMNS = ("prefix", "tenant", "name", "scope", "created", "expires", "last used", "revoked")


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "-"


class Command(BaseCommand):
    help = "List API keys (prefixes and metadata only: secrets are never stored)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", default=None)

    def handle(self, *args, tenant: str | None, **options) -> None:
        keys = ApiKey.objects.select_related("tenant").order_by("tenant__name", "created_at")
        if tenant is not None:
            if not Tenant.objects.filter(name=tenant).exists():
                raise CommandError(f"No tenant named {tenant!r}.")
            keys = keys.filter(tenant__name=tenant)
        rows = [COLUMNS] + [
            (key.prefix, key.tenant.name, key.name or "-", key.scope, _when(key.created_at), _when(key.expires_at),
             _when(key.last_used_at), _when(key.revoked_at))
            for key in keys
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
