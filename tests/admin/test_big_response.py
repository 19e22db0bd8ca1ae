"""A response with 100,000 events: every console page answers without counting or
loading the events table (its length is last_sequence_number; the timeline reads one
page by sequence number; deletion never collects the events to list them)."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
from django.test.utils import CaptureQueriesContext

from responses_app.models import OutputItem, Response, ResponseEvent, ResponseStatus

pytestmark = [pytest.mark.django_db, pytest.mark.core]

EVENTS = 100_000
EVENT_TABLE = ResponseEvent._meta.db_table
LIST = "/admin/responses_app/response/"


@pytest.fixture
def huge_response(tenant) -> Response:
    response = Response.objects.create(tenant=tenant, model="echo", status=ResponseStatus.COMPLETED, background=True,
                                       request={"metadata": {"batch": "huge"}}, last_sequence_number=EVENTS - 1)
    OutputItem.objects.create(response=response, output_index=0, item_id="msg_1", item_type="message",
                              status="completed", data={"id": "msg_1", "type": "message", "role": "assistant",
                                                        "content": [{"type": "output_text", "text": "done"}]})
    # In one statement (PostgreSQL and SQLite alike): the ORM's inserts took 20 s of the test.
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < %s) "
            f"INSERT INTO {EVENT_TABLE} (response_id, sequence_number, type, data, created_at) "
            "SELECT %s, n, 'response.output_text.delta', "
            """'{"type":"response.output_text.delta","sequence_number":' || CAST(n AS TEXT) || ',"delta":"x"}', %s """
            "FROM seq", [EVENTS - 1, response.pk, response.created_at])
    return response


def test_every_console_page_of_a_response_with_100k_events_answers_without_counting_them(operator_client,
                                                                                           huge_response):
    detail = f"{LIST}{quote(huge_response.pk)}/"
    pages = [
        ("get", LIST, {}),
        ("get", LIST, {"q": "huge"}),
        ("get", LIST, {"status__exact": "completed", "background__exact": "1"}),
        ("get", f"{detail}change/", {}),
        ("get", f"{detail}change/", {"events_after": str(EVENTS - 50)}),
        ("get", f"{detail}delete/", {}),
        ("post", LIST, {"action": "delete_responses", "_selected_action": [huge_response.pk]}),
    ]
    for method, url, params in pages:
        with CaptureQueriesContext(connection) as queries:
            page = getattr(operator_client, method)(url, params)
        assert page.status_code == 200, (url, params)
        on_events = [q["sql"] for q in queries.captured_queries if EVENT_TABLE in q["sql"]]
        assert not [sql for sql in on_events if "COUNT(" in sql.upper()], (url, params)
        # Any read of the events table is one page of them, never all.
        assert not [sql for sql in on_events if "LIMIT" not in sql.upper()], (url, params)

    html = operator_client.get(f"{detail}change/").content.decode()
    assert "100000 in all" in html and "<td>99</td>" in html and "<td>100</td>" not in html
    assert "100000 stream events" in operator_client.get(f"{detail}delete/").content.decode()
    assert huge_response.pk in operator_client.get(LIST, {"q": "huge"}).content.decode()
