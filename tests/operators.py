"""Operators of the console, for every capability's console tests: a superuser, and a staff
member who may only view responses. Each capability's conftest imports the fixtures."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

OPERATOR_PASSWORD = "operator-pw-1"
VIEWER_PASSWORD = "viewer-pw-1"


def make_operator(username: str = "operator") -> User:
    User.objects.filter(username=username).delete()
    return User.objects.create_superuser(username, f"{username}@example.com", OPERATOR_PASSWORD)


def make_viewer(username: str = "viewer") -> User:
    """Staff, with responses_app.view_response and nothing else."""
    User.objects.filter(username=username).delete()
    user = User.objects.create_user(username, f"{username}@example.com", VIEWER_PASSWORD, is_staff=True)
    user.user_permissions.add(Permission.objects.get(content_type__app_label="responses_app",
                                                     codename="view_response"))
    return user


@pytest.fixture
def operator_client(client, db):
    client.force_login(make_operator())
    return client


@pytest.fixture
def viewer_client(client, db):
    client.force_login(make_viewer())
    return client
