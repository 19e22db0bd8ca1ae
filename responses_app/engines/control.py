"""A Celery remote-control command that reports this worker's engine requests.

Operators (``celery -A project inspect engine_requests``) and tests use it to see what
each worker's engines are running and which requests were aborted.
"""

from __future__ import annotations

from celery.worker.control import inspect_command

from responses_app.engines.host import engine_host


@inspect_command()
def engine_requests(state) -> dict[str, dict]:
    host = engine_host()

    async def snapshot() -> dict[str, dict]:
        # Read on the engine loop, where these sets change.
        report = {}
        for model, engine in host.engines().items():
            running = getattr(engine, "running_requests", None)
            aborted = getattr(engine, "aborted_requests", None)
            scheduler = getattr(engine, "scheduler_stats", None)
            report[model] = {
                "running": sorted(running()) if running else [],
                "aborted": list(aborted()) if aborted else [],
                "scheduler": scheduler() if scheduler else None,
            }
        return report

    return host.call(snapshot())
