"""Conversations (``client.conversations``): items.py appends their items,
turns.py ties a response to one (its history in, its items out), store.py serves them to
the API (validated bodies, pages).

Not to be confused with responses_app/context/history.py: the prompt of one response."""
