"""Operator-facing health and metrics: ``GET /healthz`` and ``GET /metrics``.

Workers observe most measurements, on machines the web process cannot see into, so
observations travel through Redis: each process sums its observations in memory and
adds them to shared Redis hashes about once a second (``recorder``); the web process
reads those hashes, the responses table and the broker's queues at scrape time
(``collector``). ``metrics`` is the contract both sides share: names, labels, buckets
and the Redis keys.
"""
