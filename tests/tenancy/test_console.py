"""The operator console for tenants and keys: limits, daily usage, creating and revoking keys.

A key's plaintext is shown exactly once, in the add view's own response: never in a
cookie, never through messages, never on any later page.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.messages import get_messages
from django.utils import timezone

from responses_app.models import ApiKey, ApiKeyScope, Tenant, TenantDailyUsage
from responses_app.tenancy.api_keys import authenticate_bearer, create_api_key
from responses_app.wire.errors import AuthenticationFailed

pytestmark = [pytest.mark.django_db, pytest.mark.core]

KEY_IN_PAGE = re.compile(r"sk-[a-z0-9]{12}-[A-Za-z0-9_\-]{32,128}")
ADD_URL = "/admin/responses_app/apikey/add/"


@pytest.fixture
def operator(django_user_model):
    return django_user_model.objects.create_superuser("operator", "op@example.com", "pw")


@pytest.fixture
def staff_client(client, operator):
    client.force_login(operator)
    return client


def key_log(key: ApiKey, action_flag: int) -> list[LogEntry]:
    return list(LogEntry.objects.filter(object_id=str(key.pk), action_flag=action_flag,
                                        content_type__model="apikey"))


# --- creating a key --------------------------------------------------------------------------


def test_adding_a_key_shows_its_plaintext_once_on_the_add_response_and_nowhere_else(staff_client):
    tenant = Tenant.objects.create(name="erin")
    expires = timezone.now() + timedelta(days=30)

    reply = staff_client.post(ADD_URL, {
        "tenant": tenant.pk, "name": "ci reader", "scope": ApiKeyScope.READ_ONLY, "event_names": "open_responses",
        "reasoning_fields": "both",
        "expires_at_0": expires.strftime("%Y-%m-%d"), "expires_at_1": expires.strftime("%H:%M:%S"),
    })

    assert reply.status_code == 200
    html = reply.content.decode()
    plaintexts = set(KEY_IN_PAGE.findall(html))
    assert len(plaintexts) == 1
    plaintext = plaintexts.pop()
    key = ApiKey.objects.get(tenant=tenant)
    assert (key.name, key.scope, key.prefix) == ("ci reader", ApiKeyScope.READ_ONLY, plaintext.split("-")[1])
    assert key.event_names == "open_responses"
    assert abs(key.expires_at - expires) < timedelta(seconds=1)
    caller = authenticate_bearer(f"Bearer {plaintext}")
    assert caller.api_key.pk == key.pk and not caller.can_write
    assert "no-store" in reply["Cache-Control"]
    secret = plaintext.split("-", 2)[2]
    assert all(secret not in morsel.value for morsel in reply.cookies.values())
    assert all(secret not in morsel.value for morsel in staff_client.cookies.values())
    assert all(secret not in str(message) for message in get_messages(reply.wsgi_request))
    assert len(key_log(key, ADDITION)) == 1
    # Afterwards: the prefix only.
    for url in (f"/admin/responses_app/apikey/{key.pk}/change/", "/admin/responses_app/apikey/"):
        page = staff_client.get(url).content.decode()
        assert key.prefix in page
        assert secret not in page and key.secret_hmac not in page


def test_a_new_key_cannot_expire_in_the_past(staff_client):
    tenant = Tenant.objects.create(name="frank")
    past = timezone.now() - timedelta(days=1)
    reply = staff_client.post(ADD_URL, {
        "tenant": tenant.pk, "name": "", "scope": ApiKeyScope.READ_WRITE, "event_names": "openai",
        "reasoning_fields": "both",
        "expires_at_0": past.strftime("%Y-%m-%d"), "expires_at_1": past.strftime("%H:%M:%S"),
    })
    assert reply.status_code == 200
    assert "must expire in the future" in reply.content.decode()
    assert not KEY_IN_PAGE.search(reply.content.decode())
    assert not ApiKey.objects.filter(tenant=tenant).exists()


def test_the_change_page_edits_name_expiry_and_event_names_but_not_tenant_or_scope(staff_client):
    key, _ = create_api_key("grace", "old name")
    other = Tenant.objects.create(name="mallory")
    expires = timezone.now() + timedelta(days=2)
    reply = staff_client.post(f"/admin/responses_app/apikey/{key.pk}/change/", {
        "name": "new name", "expires_at_0": expires.strftime("%Y-%m-%d"),
        "expires_at_1": expires.strftime("%H:%M:%S"), "tenant": other.pk, "scope": ApiKeyScope.READ_ONLY,
        "event_names": "open_responses", "reasoning_fields": "reasoning_content",
    })
    assert reply.status_code == 302
    key.refresh_from_db()
    assert (key.name, key.event_names, key.reasoning_fields) == ("new name", "open_responses", "reasoning_content")
    assert abs(key.expires_at - expires) < timedelta(seconds=1)
    assert (key.tenant.name, key.scope) == ("grace", ApiKeyScope.READ_WRITE)


# --- revoking a key --------------------------------------------------------------------------


def test_the_revoke_button_revokes_once_and_logs_it(staff_client):
    key, plaintext = create_api_key("heidi")
    change_page = staff_client.get(f"/admin/responses_app/apikey/{key.pk}/change/").content.decode()
    revoke_url = f"/admin/responses_app/apikey/{key.pk}/revoke/"
    assert f'action="{revoke_url}"' in change_page

    assert staff_client.get(revoke_url).status_code == 405
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None
    reply = staff_client.post(revoke_url)

    assert reply.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None
    with pytest.raises(AuthenticationFailed, match="revoked"):
        authenticate_bearer(f"Bearer {plaintext}")
    assert len(key_log(key, CHANGE)) == 1
    revoked_at = key.revoked_at
    staff_client.post(revoke_url)
    key.refresh_from_db()
    assert key.revoked_at == revoked_at
    assert len(key_log(key, CHANGE)) == 1
    assert revoke_url not in staff_client.get(f"/admin/responses_app/apikey/{key.pk}/change/").content.decode()


def test_the_revoke_action_revokes_the_selected_keys_and_logs_each(staff_client):
    first, _ = create_api_key("ivan")
    second, _ = create_api_key("ivan")
    kept, _ = create_api_key("ivan")
    reply = staff_client.post("/admin/responses_app/apikey/",
                              {"action": "revoke_keys", "_selected_action": [first.pk, second.pk]})
    assert reply.status_code == 302
    revoked = ApiKey.objects.filter(tenant=first.tenant, revoked_at__isnull=False)
    assert set(revoked.values_list("pk", flat=True)) == {first.pk, second.pk}
    assert ApiKey.objects.get(pk=kept.pk).revoked_at is None
    assert len(key_log(first, CHANGE)) == len(key_log(second, CHANGE)) == 1


def test_the_key_list_shows_prefix_tenant_scope_and_expiry(staff_client):
    key, _ = create_api_key("judy", "deploy", scope=ApiKeyScope.READ_ONLY,
                            expires_at=timezone.now() + timedelta(days=3))
    html = staff_client.get("/admin/responses_app/apikey/").content.decode()
    assert key.prefix in html and "judy" in html and "deploy" in html
    assert "Read only" in html
    assert "column-expires_at" in html and "column-last_used_at" in html


# --- tenants and usage -------------------------------------------------------------------------


def test_the_tenant_page_edits_limits_and_shows_recent_usage_newest_first(staff_client):
    tenant = Tenant.objects.create(name="kate")
    today = timezone.now().date()
    TenantDailyUsage.objects.create(tenant=tenant, day=today - timedelta(days=1), responses=7, input_tokens=717171)
    TenantDailyUsage.objects.create(tenant=tenant, day=today, responses=3, input_tokens=323232)
    TenantDailyUsage.objects.create(tenant=tenant, day=today - timedelta(days=400), responses=1, input_tokens=989898)
    url = f"/admin/responses_app/tenant/{tenant.pk}/change/"

    html = staff_client.get(url).content.decode()
    assert html.index("323232") < html.index("717171")
    assert "989898" not in html

    reply = staff_client.post(url, {"name": "kate", "max_concurrent_background": "3", "requests_per_minute": "",
                                    "max_output_tokens": "512", **inline_management_form(html)})
    assert reply.status_code == 302, reply.content.decode()[:2000]
    tenant.refresh_from_db()
    assert (tenant.max_concurrent_background, tenant.requests_per_minute, tenant.max_output_tokens) == (3, None, 512)
    assert TenantDailyUsage.objects.filter(tenant=tenant).count() == 3


def inline_management_form(html: str) -> dict[str, str]:
    """The hidden management-form fields of the page's inline formsets, as posted back."""
    return dict(re.findall(r'name="(daily_usage-[A-Z_]+)"[^>]*value="(\d*)"', html))


def test_the_usage_list_filters_by_tenant(staff_client):
    mine, theirs = Tenant.objects.create(name="liam"), Tenant.objects.create(name="mona")
    TenantDailyUsage.objects.create(tenant=mine, day=date(2025, 1, 2), responses=1, output_tokens=4242)
    TenantDailyUsage.objects.create(tenant=theirs, day=date(2025, 1, 2), responses=1, output_tokens=5353)
    html = staff_client.get("/admin/responses_app/tenantdailyusage/", {"tenant__id__exact": mine.pk}).content.decode()
    # As cell text: the tenant filter lists every tenant, whose random names may hold the digits.
    assert ">4,242<" in html or ">4242<" in html
    assert ">5353<" not in html and ">5,353<" not in html
    assert staff_client.get("/admin/responses_app/tenantdailyusage/", {"day__year": "2025"}).status_code == 200
    assert staff_client.get("/admin/responses_app/tenantdailyusage/add/").status_code == 403
