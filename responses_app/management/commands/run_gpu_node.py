"""Run a GPU node for one vLLM model: its engine core once, and its worker processes as
clients of it (responses_app/engines/node.py)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from responses_app.engines.node import NodePlan, NodeSupervisor


class Command(BaseCommand):
    help = ("Run a GPU node for a vLLM model: one engine core, and the model's worker_processes Celery workers "
            "sharing it; restarts what dies.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--model", required=True)
        parser.add_argument("--processes", type=int, default=None,
                            help="worker processes (default: the registry entry's worker_processes, else 1)")
        parser.add_argument("--queues", default=None, help="queues the workers consume (default: model.<model>)")
        parser.add_argument("--hostname", default=None,
                            help="each worker's Celery node name; {slot} is its client slot "
                                 "(default: node-<model>-{slot}@%%h)")
        parser.add_argument("--run-dir", type=Path, default=None,
                            help="sockets, the admission file, node.json (default: RUN_DIR/node-<model>)")
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args, model: str, processes: int | None, queues: str | None, hostname: str | None,
               run_dir: Path | None, loglevel: str, **options) -> None:
        entry = settings.MODEL_REGISTRY.get(model)
        if entry is None or entry["engine"] != "vllm":
            raise CommandError(f"{model!r} is not a vLLM model of MODEL_REGISTRY (echo runs one engine per process)")
        logging.basicConfig(level=loglevel, format="%(asctime)s %(levelname)s node %(message)s")
        celery = str(Path(sys.executable).parent / "celery")
        worker_command = [celery, "-A", "project", "worker", "--pool", "threads",
                          "--queues", queues or entry["queue"],
                          "--hostname", hostname or f"node-{model}-{{slot}}@%h",
                          "--loglevel", loglevel, "--without-gossip", "--without-mingle"]
        plan = NodePlan(model=model, processes=processes or entry.get("worker_processes", 1),
                        run_dir=run_dir or settings.RUN_DIR / f"node-{model}", worker_command=worker_command,
                        response_slots=int(os.environ.get("WORKER_RESPONSE_SLOTS") or entry.get(
                            "engine_args", {}).get("max_num_seqs", settings.ENGINE_BATCH_DEFAULT)))
        NodeSupervisor(plan).run()
