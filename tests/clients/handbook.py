"""A vector store for the clients' file search tools, made with the openai SDK on the live
stack (its worker indexes the files), and the echo script that searches it and cites the
file it found."""

from __future__ import annotations

from tests.conftest import sdk_client
from tests.live.stack import LiveStack

HANDBOOK = {
    "leave.md": "Every employee has 27 days of paid annual leave. Unused leave carries over to March.",
    "expenses.md": "Train tickets are reimbursed in second class. Receipts go to the finance team.",
}
QUERY = "annual leave days"
ANSWER = "You have 27 days of paid leave 【0†leave.md】."
# The model looks in the handbook (file_search.msearch), then answers citing the first result.
SEARCH_THEN_CITE = ("<|channel|>analysis<|message|>I will look in the handbook.<|end|>"
                    "<|start|>assistant to=file_search.msearch<|channel|>analysis <|constrain|>json"
                    f'<|message|>{{"queries": ["{QUERY}"]}}<|call|>'
                    f"<|start|>assistant<|channel|>final<|message|>{ANSWER}<|return|>")


def handbook(stack: LiveStack, key: str) -> tuple[str, dict[str, str]]:
    """A new vector store of the handbook's files, all indexed: its id and the files' ids by name."""
    client = sdk_client(stack, key)
    store = client.vector_stores.create(name="handbook")
    ids = {}
    for name, text in HANDBOOK.items():
        file = client.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=(name, text.encode()),
                                                          poll_interval_ms=100)
        assert file.status == "completed", file.last_error
        ids[name] = file.id
    return store.id, ids
