"""The operator console in a real browser (Debian's Chromium, driven by Playwright)
against the live stack: Daphne serves the admin and its event stream, the Celery
worker runs the responses, and the page follows them without a reload.

Screenshots of the list, of a response's page and of a new key are written to test-artifacts/,
or to SCREENSHOTS_DIR when it is set: ``make screenshots`` sets it to docs/images/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.admin.utils import quote
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.live.stack import ROOT
from tests.operators import OPERATOR_PASSWORD, VIEWER_PASSWORD, make_operator, make_viewer

pytestmark = pytest.mark.core

CHROMIUM = "/usr/bin/chromium"
# Root in a container, and no network: no sandbox, no GPU, and none of the background
# fetches (updates, sync, QUIC probes) that would try the closed network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# Where the screenshots go: docs/images/ under `make screenshots` (the pictures of docs/operating.md).
ARTIFACTS = Path(os.environ.get("SCREENSHOTS_DIR") or ROOT / "test-artifacts")
# Long enough to watch: the echo engine quotes it back, one token per 40 ms.
SLOW_INPUT = " ".join(f"Line {n}: the operator console follows this response as it streams." for n in range(12))


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    # Playwright's sync API keeps an asyncio loop in this thread, which makes Django's
    # ORM refuse to run here ("async context"). The ORM use beside it is ordinary
    # blocking work on its own connection, so the guard is lifted for these tests.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def logged_in(chromium: Browser, admin_url: str, username: str, password: str) -> tuple[BrowserContext, Page]:
    """A fresh browser context, logged in through the real login form."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())  # the confirm() of destructive buttons
    page.goto(f"{admin_url}login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    expect(page.locator("#user-tools")).to_contain_text(username)
    # Daphne serves the admin's own CSS (project/asgi.py): the console is styled as operators see it.
    assert page.request.get(admin_url.removesuffix("/admin/") + "/static/admin/css/base.css").ok
    return context, page


@pytest.fixture
def admin_url(stack) -> str:
    return stack.base_url.removesuffix("/v1") + "/admin/"


def detail_url(admin_url: str, response_id: str) -> str:
    return f"{admin_url}responses_app/response/{quote(response_id)}/change/"


def timeline_rows(page: Page) -> int:
    return page.locator("#event-timeline tbody tr[data-seq]").count()


def status_badge(page: Page):
    return page.locator(".field-status_badge .response-status")


def test_an_operator_watches_a_response_live_cancels_it_and_reruns_it(chromium, stack, alice, db_access,
                                                                       admin_url):
    operator = make_operator("console-operator")
    context, page = logged_in(chromium, admin_url, "console-operator", OPERATOR_PASSWORD)
    response = alice.responses.create(model="echo", input=SLOW_INPUT, background=True,
                                      metadata={"echo_token_delay_ms": "40", "ticket": "OPS-17"})

    page.goto(detail_url(admin_url, response.id))
    page.evaluate("window.loadedOnce = true")  # gone if the page reloads
    shown = timeline_rows(page)
    # Live: rows arrive without a reload, and the badge follows the lifecycle events.
    page.wait_for_function(f"document.querySelectorAll('#event-timeline tbody tr[data-seq]').length >= {shown + 10}",
                           timeout=30_000)
    expect(status_badge(page)).to_have_attribute("data-status", "in_progress")
    expect(page.locator("#live-tail-state")).to_have_text("live")
    assert page.evaluate("window.loadedOnce") is True
    seqs = [int(s) for s in page.locator("#event-timeline tbody tr[data-seq]").evaluate_all(
        "rows => rows.map(r => r.dataset.seq)")]
    assert seqs == list(range(len(seqs)))  # in order, none twice, none skipped

    page.click("#action-cancel")
    expect(page.locator("ul.messagelist")).to_contain_text("Cancel requested")
    expect(status_badge(page)).to_have_attribute("data-status", "cancelled", timeout=15_000)
    # The page the action redirects to follows the response live to its end; or, where the
    # worker honoured the cancel before that page was rendered, shows it finished.
    if page.locator("#live-tail-state").count():
        expect(page.locator("#live-tail-state")).to_contain_text("ended (cancelled)")
    else:
        expect(page.locator("#event-timeline tbody tr[data-seq]").last).to_contain_text("response.incomplete")
    assert alice.responses.retrieve(response.id).status == "cancelled"

    page.click("#action-rerun")
    expect(page.locator("ul.messagelist")).to_contain_text(f"Re-running {response.id} as ")
    rerun_id = re.search(r"/response/([^/]+)/change/", page.url).group(1).replace("_5F", "_")
    assert rerun_id != response.id
    expect(page.locator(".field-rerun_of a")).to_have_text(response.id)
    expect(status_badge(page)).to_have_attribute("data-status", "completed", timeout=60_000)
    rerun = alice.responses.retrieve(rerun_id)
    assert rerun.status == "completed" and rerun.background and rerun.metadata["ticket"] == "OPS-17"
    assert "the operator console follows this response" in rerun.output_text

    page.reload()  # the finished page: output, usage, the whole first page of events
    expect(page.locator("#response-output")).to_contain_text("the operator console follows this response")
    expect(page.locator("#response-usage")).to_contain_text("total tokens")
    ARTIFACTS.mkdir(exist_ok=True)
    page.click("#toggle-nav-sidebar")  # the page's width to the response (the choice is remembered)
    page.set_viewport_size({"width": 1400, "height": 2200})
    page.screenshot(path=str(ARTIFACTS / "admin-response-detail.png"))
    page.set_viewport_size({"width": 1400, "height": 1000})

    page.goto(detail_url(admin_url, response.id))
    expect(page.locator(".field-reruns a.rerun-link")).to_have_text(rerun_id)
    page.set_viewport_size({"width": 1800, "height": 800})
    page.goto(f"{admin_url}responses_app/response/")
    expect(page.locator("#result_list")).to_contain_text(rerun_id)
    page.screenshot(path=str(ARTIFACTS / "admin-responses-list.png"))
    context.close()

    entries = set(LogEntry.objects.filter(user=operator).values_list("object_id", "action_flag", "change_message"))
    assert entries == {(response.id, CHANGE, "Requested cancel."), (response.id, CHANGE, f"Re-ran as {rerun_id}."),
                       (rerun_id, ADDITION, f"Re-run of {response.id}.")}
    assert Path(ARTIFACTS / "admin-response-detail.png").stat().st_size > 10_000


def test_a_view_only_staff_member_sees_no_buttons_and_a_forged_post_is_refused(chromium, stack, alice, db_access,
                                                                            admin_url):
    make_viewer("console-viewer")
    context, page = logged_in(chromium, admin_url, "console-viewer", VIEWER_PASSWORD)
    response = alice.responses.create(model="echo", input=SLOW_INPUT, background=True,
                                      metadata={"echo_token_delay_ms": "20"})
    try:
        page.goto(detail_url(admin_url, response.id))
        expect(page.locator("#event-timeline")).to_be_visible()
        # Viewing includes the live tail (it only reads).
        expect(status_badge(page)).to_have_attribute("data-status", "completed", timeout=60_000)
        for button in ("#action-cancel", "#action-rerun", "#action-delete"):
            expect(page.locator(button)).to_have_count(0)
        page.goto(f"{admin_url}responses_app/response/")
        expect(page.locator("#result_list")).to_contain_text(response.id)
        expect(page.locator("select[name=action]")).to_have_count(0)

        # A forged POST with a valid session and CSRF token: the permission check refuses it.
        csrf = next(c["value"] for c in context.cookies() if c["name"] == "csrftoken")
        base = f"{admin_url}responses_app/response/{quote(response.id)}/"
        for action in ("cancel", "rerun", "delete"):
            reply = page.request.post(f"{base}{action}/", form={"csrfmiddlewaretoken": csrf},
                                      headers={"Referer": f"{base}change/"}, max_redirects=0)
            assert reply.status == 403, action
        assert page.request.get(f"{base}events/?after=-1").headers["content-type"].startswith("text/event-stream")
    finally:
        context.close()
    assert LogEntry.objects.filter(object_id=response.id).count() == 0
    assert alice.responses.retrieve(response.id).status == "completed"


def test_an_operator_sets_tenant_limits_and_creates_a_key_that_is_shown_once(chromium, stack, db_access, admin_url):
    import openai

    from responses_app.models import ApiKey, Tenant
    from responses_app.tenancy.api_keys import KEY_PATTERN

    make_operator("key-operator")
    Tenant.objects.filter(name="acme").delete()
    tenant = Tenant.objects.create(name="acme")
    context, page = logged_in(chromium, admin_url, "key-operator", OPERATOR_PASSWORD)

    page.goto(f"{admin_url}responses_app/tenant/{tenant.pk}/change/")
    page.fill("#id_max_concurrent_background", "2")
    page.fill("#id_requests_per_minute", "120")
    page.click("input[name=_save]")
    expect(page.locator("ul.messagelist")).to_contain_text("was changed successfully")
    tenant.refresh_from_db()
    assert (tenant.max_concurrent_background, tenant.requests_per_minute) == (2, 120)

    page.goto(f"{admin_url}responses_app/apikey/add/")
    page.select_option("#id_tenant", str(tenant.pk))
    page.fill("#id_name", "reporting dashboard")
    page.select_option("#id_scope", "read_only")
    page.select_option("#id_reasoning_fields", "reasoning")
    page.click("input[name=_save]")
    plaintext = page.locator("#api-key-plaintext").input_value()
    assert plaintext.startswith("sk-")
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 600})
    page.screenshot(path=str(ARTIFACTS / "admin-api-key-created.png"))

    # The key works, read-only, and the console never shows it again.
    key = ApiKey.objects.get(tenant=tenant, name="reporting dashboard")
    assert key.reasoning_fields == "reasoning"
    client = openai.OpenAI(base_url=stack.base_url, api_key=plaintext, max_retries=0)
    assert [model.id for model in client.models.list()]
    with pytest.raises(openai.PermissionDeniedError):
        client.responses.create(model="echo", input="Hello")
    page.goto(f"{admin_url}responses_app/apikey/{key.pk}/change/")
    expect(page.locator("#content-main")).to_contain_text(key.prefix)
    assert plaintext not in page.content()
    # The whole secret (it may itself contain "-", so a fragment after the last one could be
    # a few characters that any random cookie value contains).
    secret = KEY_PATTERN.match(plaintext).group(2)
    assert all(secret not in cookie["value"] for cookie in context.cookies())
    context.close()


def test_an_operator_finds_a_stored_chat_completion_and_reads_its_messages_answer_and_responses(
        chromium, stack, alice, db_access, admin_url):
    completion = alice.chat.completions.create(model="echo", messages=[
        {"role": "user", "content": "Seen in the console"}], store=True, n=2)
    make_operator("chat-operator")
    context, page = logged_in(chromium, admin_url, "chat-operator", OPERATOR_PASSWORD)
    page.goto(f"{admin_url}responses_app/storedchatcompletion/")
    row = page.locator("#result_list tr", has_text=completion.id)
    expect(row).to_contain_text("completed")
    row.locator(f"a:text('{completion.id}')").click()
    main = page.locator("#content-main")
    expect(main).to_contain_text("Seen in the console")  # the request's messages
    expect(main).to_contain_text(completion.choices[0].message.content.replace("\n", " ")[:40])  # the answer
    responses = main.locator(".field-choice_responses a")
    expect(responses).to_have_count(2)  # a response per choice, each a link to its page
    responses.first.click()
    expect(status_badge(page)).to_contain_text("completed")
    context.close()
