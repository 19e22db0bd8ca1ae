"""Chat Completions (``client.chat.completions.create``): a completion is a Responses create
said another way, run as an unstored response on the same models, queues, workers, tenants
and quotas, and answered in Chat Completions' shapes."""
