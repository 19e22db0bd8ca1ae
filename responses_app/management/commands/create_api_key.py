from __future__ import annotations

from django.core.management.base import BaseCommand

from responses_app.auth import create_api_key


class Command(BaseCommand):
    help = "Create an API key for a tenant (created if needed). The plaintext key is the last line of output."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--name", default="")

    def handle(self, *args, tenant: str, name: str, **options) -> None:
        key, plaintext = create_api_key(tenant, name)
        self.stdout.write(f"Created API key {key.prefix} ({name or 'unnamed'}) for tenant {tenant}.")
        self.stdout.write("Store it now: it cannot be shown again.")
        self.stdout.write(plaintext)
