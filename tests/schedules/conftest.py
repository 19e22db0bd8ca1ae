"""The API in this process: ``stack`` is the ASGI application (tests/inprocess_fixtures.py)."""

from tests.inprocess_fixtures import app, stack  # noqa: F401 - fixtures of this folder
