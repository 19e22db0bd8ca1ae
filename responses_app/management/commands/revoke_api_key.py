from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from responses_app.models import ApiKey
from responses_app.tenancy.api_keys import prefix_of, revoke_api_key


class Command(BaseCommand):
    help = "Revoke an API key (irreversible), given its prefix or the whole key."

    def add_arguments(self, parser) -> None:
        parser.add_argument("prefix_or_key")

    def handle(self, *args, prefix_or_key: str, **options) -> None:
        prefix = prefix_of(prefix_or_key)
        key = ApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
        if key is None:
            raise CommandError(f"No API key with prefix {prefix!r}.")
        if revoke_api_key(key):
            self.stdout.write(f"Revoked API key {key.prefix} of tenant {key.tenant.name}.")
        else:
            self.stdout.write(f"API key {key.prefix} of tenant {key.tenant.name} was already revoked "
                              f"at {key.revoked_at.isoformat()}.")
