from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from responses_app.models import ApiKeyScope, EventNames, ReasoningFields
from responses_app.tenancy.api_keys import create_api_key


class Command(BaseCommand):
    help = "Create an API key for a tenant (created if needed). The plaintext key is the last line of output."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--name", default="")
        parser.add_argument("--scope", choices=list(ApiKeyScope.values), default=ApiKeyScope.READ_WRITE)
        parser.add_argument("--event-names", choices=list(EventNames.values), default=EventNames.OPENAI,
                            help="How its streams name the reasoning events: OpenAI's (the default) or the Open "
                                 "Responses specification's.")
        parser.add_argument("--reasoning-fields", choices=list(ReasoningFields.values), default=ReasoningFields.BOTH,
                            help="Under which names its chat completions give their reasoning: both (the default), "
                                 "reasoning or reasoning_content.")
        parser.add_argument("--expires-in-days", type=int, default=None,
                            help="The key stops working this many days from now (default: never).")

    def handle(self, *args, tenant: str, name: str, scope: str, expires_in_days: int | None, event_names: str,
               reasoning_fields: str, **options) -> None:
        if expires_in_days is not None and expires_in_days < 1:
            raise CommandError("--expires-in-days must be at least 1.")
        expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days is not None else None
        key, plaintext = create_api_key(tenant, name, scope=scope, expires_at=expires_at, event_names=event_names,
                                        reasoning_fields=reasoning_fields)
        expiry = f", expires {expires_at.isoformat()}" if expires_at else ""
        self.stdout.write(f"Created API key {key.prefix} ({name or 'unnamed'}) for tenant {tenant}, "
                          f"scope {scope}{expiry}.")
        self.stdout.write("Store it now: it cannot be shown again.")
        # Scripts and tests read the key from the last line: keep it last.
        self.stdout.write(plaintext)
