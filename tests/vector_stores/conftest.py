"""The API in this process: ``stack`` is the ASGI application (tests/inprocess_fixtures.py)."""

from tests.inprocess_fixtures import stack  # noqa: F401 - a fixture of this folder
from tests.operators import operator_client, viewer_client  # noqa: F401 - fixtures of this folder
