"""Run one model's shared vLLM engine core until it dies (started by run_gpu_node)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Run a model's vLLM engine core with client slots for a node's worker processes (run_gpu_node starts it)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--model", required=True)
        parser.add_argument("--slots", type=int, required=True, help="client slots (worker processes and spares)")
        parser.add_argument("--run-dir", type=Path, required=True, help="where the IPC sockets go")
        parser.add_argument("--addresses-file", type=Path, required=True,
                            help="written once the engine core is up: its addresses and pid")

    def handle(self, *args, model: str, slots: int, run_dir: Path, addresses_file: Path, **options) -> None:
        from responses_app.engines.shared_core import serve_engine_core

        entry = settings.MODEL_REGISTRY.get(model)
        if entry is None or entry["engine"] != "vllm":
            raise CommandError(f"{model!r} is not a vLLM model of MODEL_REGISTRY")
        # SIGTERM (the supervisor's stop) unwinds serve_engine_core, which shuts down what it launched.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        sys.exit(serve_engine_core(model, entry, slots, run_dir, addresses_file))
