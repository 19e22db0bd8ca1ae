"""The basic operator console: response list and detail (items, paged events), cancel."""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
from django.test.utils import CaptureQueriesContext

from responses_app.models import OutputItem, Response, ResponseEvent, ResponseStatus
from responses_app.tenancy.api_keys import create_api_key

pytestmark = [pytest.mark.django_db, pytest.mark.core]


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("operator", "op@example.com", "pw")
    client.force_login(user)
    return client


@pytest.fixture
def big_response() -> Response:
    key, _ = create_api_key("carol")
    response = Response.objects.create(tenant=key.tenant, model="echo", status=ResponseStatus.COMPLETED,
                                       background=True, last_sequence_number=249)
    OutputItem.objects.create(response=response, output_index=0, item_id="msg_1", item_type="message",
                              status="completed", data={"id": "msg_1", "type": "message", "text": "hello there"})
    ResponseEvent.objects.bulk_create(
        ResponseEvent(response=response, sequence_number=n, type="response.output_text.delta", data=f'{{"n":{n}}}')
        for n in range(250)
    )
    return response


def test_it_lists_responses_filtered_by_status_and_searched_by_id(staff_client, big_response):
    page = staff_client.get("/admin/responses_app/response/", {"status__exact": "completed", "q": big_response.id})
    assert page.status_code == 200
    assert big_response.id in page.content.decode()


def test_it_shows_items_and_pages_events_without_counting_them(staff_client, big_response):
    with CaptureQueriesContext(connection) as queries:
        page = staff_client.get(f"/admin/responses_app/response/{quote(big_response.id)}/change/",
                                {"events_after": "99"})
    html = page.content.decode()
    assert page.status_code == 200
    assert "msg_1" in html and "250 in all" in html
    assert "<td>100</td>" in html and "<td>199</td>" in html and "<td>200</td>" not in html
    assert 'href="?events_after=199"' in html and 'href="?events_after=-1"' in html
    event_table = ResponseEvent._meta.db_table
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper() and event_table in q["sql"]]
    assert counts == []


def test_the_cancel_action_cancels_a_queued_background_response(staff_client):
    key, _ = create_api_key("dave")
    response = Response.objects.create(tenant=key.tenant, model="echo", background=True, last_sequence_number=0)
    ResponseEvent.objects.create(response=response, sequence_number=0, type="response.created", data={})
    reply = staff_client.post("/admin/responses_app/response/",
                              {"action": "cancel_responses", "_selected_action": [response.pk]})
    assert reply.status_code == 302
    response.refresh_from_db()
    assert response.status == "cancelled"
    assert list(response.events.values_list("sequence_number", "type")) == [
        (0, "response.created"), (1, "response.incomplete")]


def test_the_event_timeline_pages_a_packed_log_as_it_paged_its_rows(staff_client):
    from responses_app.stream import event_log

    key, _ = create_api_key("erin")
    response = Response.objects.create(tenant=key.tenant, model="echo", status=ResponseStatus.COMPLETED,
                                       background=True, last_sequence_number=149)
    ResponseEvent.objects.bulk_create(
        ResponseEvent(response=response, sequence_number=n, type="response.output_text.delta",
                      data=json.dumps({"type": "response.output_text.delta", "sequence_number": n,
                                       "delta": f"part {n}"}))
        for n in range(150)
    )
    pages = [{"events_after": "-1"}, {"events_after": "99"}, {"events_after": "149"}]
    url = f"/admin/responses_app/response/{quote(response.id)}/change/"  # quoted as the admin's links are
    as_rows = [staff_client.get(url, page) for page in pages]

    assert event_log.pack(response.pk) and not ResponseEvent.objects.filter(response=response).exists()
    as_packed = [staff_client.get(url, page) for page in pages]
    for rows, packed in zip(as_rows, as_packed, strict=True):
        assert packed.status_code == 200
        assert [packed.context[name] for name in ("events", "events_next", "events_previous")] == [
            rows.context[name] for name in ("events", "events_next", "events_previous")]
    html = as_packed[1].content.decode()
    assert "<td>100</td>" in html and "part 149" in html and "<td>99</td>" not in html


def test_the_request_panel_shows_what_todays_clients_send():
    from responses_app.console_display import request_view

    shown = dict(request_view({"presence_penalty": 0.5, "client_metadata": {"session_id": "s-1"},
                               "reasoning": {"effort": "xhigh", "summary": "auto"}, "tools": []})["sampling"])

    assert shown["presence_penalty"] == 0.5
    assert json.loads(shown["client_metadata"]) == {"session_id": "s-1"}
    assert json.loads(shown["reasoning"]) == {"effort": "xhigh", "summary": "auto"}


def test_a_response_that_ends_while_its_page_is_read_shows_ended_not_a_dead_live_tail(staff_client, monkeypatch):
    from responses_app.admin import responses as admin_responses

    key, _ = create_api_key("frank")
    response = Response.objects.create(tenant=key.tenant, model="echo", status=ResponseStatus.IN_PROGRESS,
                                       background=True, last_sequence_number=0)
    ResponseEvent.objects.create(response=response, sequence_number=0, type="response.created", data="{}")
    read_events = admin_responses.event_log.events

    def events_after_the_end(response_id, after, limit):
        # The response ends between the page's read of its row and of its events.
        if not ResponseEvent.objects.filter(response_id=response_id, sequence_number=1).exists():
            ResponseEvent.objects.create(response_id=response_id, sequence_number=1, type="response.incomplete",
                                         data="{}")
            Response.objects.filter(pk=response_id).update(status=ResponseStatus.CANCELLED, last_sequence_number=1)
        return read_events(response_id, after, limit)

    monkeypatch.setattr(admin_responses.event_log, "events", events_after_the_end)
    page = staff_client.get(f"/admin/responses_app/response/{quote(response.id)}/change/")

    assert page.context["live_tail"] is None
    assert 'data-status="cancelled"' in page.content.decode()
