from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from responses_app.harmony.vocab import write_vocabulary


class Command(BaseCommand):
    help = "Write harmony's o200k_base.tiktoken from toktok-rs into HARMONY_VOCAB_DIR and verify it."

    def handle(self, *args, **options) -> None:
        path = write_vocabulary(settings.HARMONY_VOCAB_DIR)
        self.stdout.write(f"harmony vocabulary ready: {path}")
