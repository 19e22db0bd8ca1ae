"""Prompt templates: a tenant's stored prompts (store.py) and their use in a create's
``prompt: {id, version, variables}`` (resolve.py), with ``{{name}}`` variables (templates.py)."""
