"""The operator console for background jobs in a real browser, against the live stack:
a scheduled response run by hand and disabled, and a failed webhook delivery inspected
and sent again."""

from __future__ import annotations

import httpx
import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from playwright.sync_api import expect

from tests.admin.test_browser import admin_url, chromium, logged_in  # noqa: F401 - fixtures
from tests.helpers import wait_for_status, wait_until
from tests.live.webhook_receiver import Receiver
from tests.operators import OPERATOR_PASSWORD, make_operator

pytestmark = pytest.mark.core


def run_action(page, action: str) -> None:
    page.select_option("select[name=action]", label=action)
    page.click("button[name=index]")


def test_an_operator_runs_a_schedule_now_and_disables_it(chromium, stack, alice, db_access,  # noqa: F811
                                                        admin_url):  # noqa: F811
    from responses_app.models import ScheduledResponse

    operator = make_operator("jobs-operator")
    schedule = alice.post("/scheduled_responses", cast_to=httpx.Response, body={
        "name": "weekly report", "schedule": {"cron": "0 9 * * 1", "timezone": "UTC"},
        "request": {"model": "echo", "input": "Write the weekly report."}}).json()
    context, page = logged_in(chromium, admin_url, "jobs-operator", OPERATOR_PASSWORD)
    # Searched for: the other tests' schedules in this database can fill the first page.
    listed = f"{admin_url}responses_app/scheduledresponse/?q={schedule['id']}"
    page.goto(listed)
    row = page.locator("#result_list tr", has_text="weekly report")
    expect(row).to_contain_text(" 09:00:00 UTC")  # the next run, a Monday at 9

    row.locator("input.action-select").check()
    run_action(page, "Run now")
    expect(page.locator("ul.messagelist")).to_contain_text("Weekly report: created resp_")  # the admin's capfirst
    page.goto(f"{admin_url}responses_app/scheduledresponse/{quote(schedule['id'])}/change/")
    link = page.locator("td.field-response_link a")
    expect(link).to_have_count(1)
    response_id = link.inner_text()
    assert wait_for_status(alice, response_id, {"completed"}).metadata["scheduled_response_id"] == schedule["id"]

    page.goto(listed)
    page.locator("#result_list tr", has_text="weekly report").locator("input.action-select").check()
    run_action(page, "Disable")
    assert ScheduledResponse.objects.get(pk=schedule["id"]).periodic_task.enabled is False
    assert alice.get(f"/scheduled_responses/{schedule['id']}", cast_to=httpx.Response).json()["enabled"] is False
    context.close()
    assert set(LogEntry.objects.filter(user=operator).values_list("change_message", flat=True)) == {
        f"Ran now as {response_id}.", "Disabled."}


def test_an_operator_inspects_a_failed_delivery_and_sends_it_again(chromium, stack, alice, db_access,  # noqa: F811
                                                                  admin_url):  # noqa: F811
    from responses_app.models import WebhookDelivery

    make_operator("hooks-operator")
    receiver = Receiver(statuses=[503] * 1000)
    try:
        endpoint = alice.webhooks.create(name="flaky", url=receiver.url, event_types=["response.completed"])
        response = alice.responses.create(model="echo", input="Notify me", background=True)
        wait_for_status(alice, response.id, {"completed"})
        wait_until(lambda: len(receiver.received) >= 2, timeout=20)
        delivery = WebhookDelivery.objects.get(endpoint_id=endpoint.id)

        context, page = logged_in(chromium, admin_url, "hooks-operator", OPERATOR_PASSWORD)
        page.goto(f"{admin_url}responses_app/webhookdelivery/{delivery.pk}/change/")
        expect(page.locator("td.field-status_code").first).to_have_text("503")
        expect(page.locator(".field-response_id")).to_contain_text(response.id)

        receiver.statuses.clear()  # the receiver is fixed
        page.goto(f"{admin_url}responses_app/webhookdelivery/?q={response.id}")
        page.locator("#result_list input.action-select").check()
        run_action(page, "Send again (same webhook-id and body)")
        expect(page.locator("ul.messagelist")).to_contain_text("queued again")
        wait_until(lambda: WebhookDelivery.objects.get(pk=delivery.pk).status == "delivered", timeout=20)
        assert {r.headers["webhook-id"] for r in receiver.received} == {delivery.event_id}
        page.goto(f"{admin_url}responses_app/webhookdelivery/{delivery.pk}/change/")
        expect(page.locator("td.field-status_code").last).to_have_text("200")
        context.close()
    finally:
        receiver.close()
