from __future__ import annotations

import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from responses_app.devtools.tiny_models import KINDS, ensure_model, vllm_greedy_mismatches
from responses_app.devtools.transcripts import verification_dates


class Command(BaseCommand):
    help = "Build (or find cached) the tiny gpt-oss test models and print their folders."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", choices=[*KINDS, "all"], default="all")
        parser.add_argument("--cache", type=Path, default=None, help="default: BASE_DIR/.cache/models")
        parser.add_argument(
            "--verify-vllm",
            action="store_true",
            help="also check that greedy decoding through vLLM reproduces the trained transcripts",
        )

    def handle(self, *args, **options) -> None:
        cache: Path = options["cache"] or settings.BASE_DIR / ".cache" / "models"
        kinds = KINDS if options["kind"] == "all" else (options["kind"],)
        for kind in kinds:
            started = time.monotonic()
            folder = ensure_model(kind, cache)
            self.stdout.write(f"{kind}: {folder} ({time.monotonic() - started:.1f}s)")
            if options["verify_vllm"] and kind == "trained":
                self._verify_with_vllm(folder)

    def _verify_with_vllm(self, folder: Path) -> None:
        started = time.monotonic()
        mismatches = vllm_greedy_mismatches(folder)
        if mismatches:
            raise CommandError("vLLM greedy decoding differs: " + "; ".join(mismatches))
        dates = ", ".join(verification_dates())
        elapsed = time.monotonic() - started
        self.stdout.write(f"vLLM greedy decoding reproduces every transcript on {dates} ({elapsed:.1f}s)")
