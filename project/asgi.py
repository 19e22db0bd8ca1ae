"""ASGI entry point served by Daphne: HTTP goes to Django (API, SSE, admin)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402  (needs Django set up)
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

# The admin's CSS and JS come straight from the installed apps, so the operator console
# works under Daphne alone; a deployment with a CDN or proxy may serve `collectstatic` instead.
application = ProtocolTypeRouter({"http": ASGIStaticFilesHandler(django_asgi_app)})
