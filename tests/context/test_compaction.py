"""context/compaction.compacted: what a context is once it holds compaction items."""

from __future__ import annotations

from responses_app.context.compaction import compacted

USER = {"type": "message", "role": "user", "content": "Hi"}
ANSWER = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]}


def test_before_the_last_compaction_only_the_users_messages_stay():
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "sealed"}
    assert compacted([USER, ANSWER, item, ANSWER]) == [USER, item, ANSWER]


def test_a_compaction_whose_summary_never_came_stands_for_nothing():
    # compaction_trigger adds its item before the summary is sampled; if the response fails
    # there, a later turn reads the context whole.
    unfinished = {"type": "compaction", "id": "cmp_2", "encrypted_content": ""}
    assert compacted([USER, ANSWER, unfinished, USER]) == [USER, ANSWER, USER]
