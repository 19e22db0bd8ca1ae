from __future__ import annotations

import argparse

from django.core.management.base import BaseCommand

from responses_app.models import Tenant

LIMITS = ("max_concurrent_background", "requests_per_minute", "max_output_tokens")


def limit(minimum: int):
    """An argparse type: a whole number >= minimum, or 'none' to remove the limit."""

    def parse(value: str) -> int | None:
        if value.lower() == "none":
            return None
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number or 'none', got {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum} (or 'none'), got {number}")
        return number

    return parse


class Command(BaseCommand):
    help = ("Create a tenant, or update an existing one's limits. Only the limits given change; "
            "'none' removes a limit.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")
        parser.add_argument("--max-concurrent-background", type=limit(0), default=argparse.SUPPRESS,
                            help="Background responses queued or running at once.")
        parser.add_argument("--requests-per-minute", type=limit(0), default=argparse.SUPPRESS,
                            help="Creates per minute.")
        parser.add_argument("--max-output-tokens", type=limit(1), default=argparse.SUPPRESS,
                            help="The most output tokens one response may ask for (and its default).")

    def handle(self, *args, name: str, **options) -> None:
        limits = {field: options[field] for field in LIMITS if field in options}
        tenant, created = Tenant.objects.get_or_create(name=name, defaults=limits)
        if not created and limits:
            for field, value in limits.items():
                setattr(tenant, field, value)
            tenant.save(update_fields=list(limits))
        shown = ", ".join(f"{field}={getattr(tenant, field)}" for field in LIMITS)
        self.stdout.write(f"{'Created' if created else 'Updated'} tenant {tenant.name}: {shown}.")
