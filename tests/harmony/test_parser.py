"""Engine tokens -> semantic events."""

from __future__ import annotations

import pytest

from responses_app.harmony.encoding import get_encoding, special_token_id
from responses_app.harmony.parser import (
    ContentDelta,
    HarmonyOutputError,
    MessageFinished,
    MessageStarted,
    OutputParser,
)

CALL = (
    "<|channel|>analysis<|message|>Need weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city":"Paris"}<|call|>'
)


def tokens(markup: str) -> list[int]:
    return get_encoding().encode(markup, allowed_special="all")


def parse(token_ids: list[int], close: bool = True) -> tuple[OutputParser, list]:
    parser = OutputParser()
    events = [event for token in token_ids for event in parser.feed(token)]
    if close:
        events += parser.close()
    return parser, events


def parse_chunks(chunks: list[list[int]]) -> list:
    """Feed engine chunks the way the worker does: token by token inside each chunk."""
    parser = OutputParser()
    events = []
    for chunk in chunks:
        for token in chunk:
            events += parser.feed(token)
    return events + parser.close()


def deltas_of(events: list) -> str:
    return "".join(event.text for event in events if isinstance(event, ContentDelta))


def finished(events: list) -> list[MessageFinished]:
    return [event for event in events if isinstance(event, MessageFinished)]


def test_final_message_streams_started_deltas_finished():
    _, events = parse(tokens("<|channel|>final<|message|>Hello world<|return|>"))
    assert events[0] == MessageStarted(kind="message", recipient=None, name=None, channel="final")
    assert deltas_of(events) == "Hello world"
    assert events[-1] == MessageFinished(kind="message", recipient=None, name=None, text="Hello world")


def test_message_boundary_inside_one_engine_chunk():
    ids = tokens("<|channel|>analysis<|message|>Hmm<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>")
    end = ids.index(special_token_id("<|end|>"))
    # One chunk holds the end of the analysis and the start of the final header.
    chunks = [ids[: end - 1], ids[end - 1 : end + 3], ids[end + 3 :]]
    events = parse_chunks(chunks)
    assert [type(e).__name__ for e in events] == [
        "MessageStarted",
        "ContentDelta",
        "MessageFinished",
        "MessageStarted",
        "ContentDelta",
        "MessageFinished",
    ]
    assert finished(events) == [
        MessageFinished(kind="reasoning", recipient=None, name=None, text="Hmm"),
        MessageFinished(kind="message", recipient=None, name=None, text="Hi"),
    ]


def test_multibyte_characters_split_across_tokens_are_never_split_in_deltas():
    text = "héllo 日本語 🎉🦄 👩‍👩‍👧"
    ids = tokens(f"<|channel|>final<|message|>{text}<|return|>")
    assert len(ids) > len(text)  # some characters really take several tokens
    _, events = parse(ids)
    deltas = [event.text for event in events if isinstance(event, ContentDelta)]
    assert "".join(deltas) == text
    assert all("\ufffd" not in delta for delta in deltas)
    assert finished(events)[0].text == text


def test_a_character_cut_off_by_the_end_of_the_stream_still_keeps_deltas_equal_to_the_text():
    ids = tokens("<|channel|>final<|message|>a") + get_encoding().encode("🦄")[:2]
    _, events = parse(ids)
    assert deltas_of(events) == finished(events)[0].text


def test_function_call_has_name_recipient_and_arguments():
    parser, events = parse(tokens(CALL))
    call = finished(events)[-1]
    assert MessageStarted(kind="function_call", recipient="functions.get_weather", name="get_weather",
                          channel="commentary") in events
    assert call == MessageFinished(
        kind="function_call", recipient="functions.get_weather", name="get_weather", text='{"city":"Paris"}'
    )
    assert parser.last_stop_token == special_token_id("<|call|>")


def test_recipient_before_the_channel_is_a_function_call_too():
    markup = "<|start|>assistant to=functions.lookup<|channel|>commentary<|message|>{}<|call|>"
    _, events = parse(tokens("<|channel|>final<|message|>x<|end|>" + markup))
    assert finished(events)[-1].name == "lookup"


def test_commentary_without_recipient_is_a_message():
    _, events = parse(tokens("<|channel|>commentary<|message|>Let me check.<|end|>"))
    assert finished(events) == [MessageFinished(kind="message", recipient=None, name=None, text="Let me check.")]


def test_other_recipients_are_builtin_tool_calls():
    _, events = parse(tokens("<|channel|>analysis to=python<|message|>print(1)<|call|>"))
    assert finished(events) == [MessageFinished(kind="tool_call", recipient="python", name=None, text="print(1)")]


def test_empty_message_still_starts_and_finishes():
    _, events = parse(tokens("<|channel|>final<|message|><|return|>"))
    assert events == [
        MessageStarted(kind="message", recipient=None, name=None, channel="final"),
        MessageFinished(kind="message", recipient=None, name=None, text=""),
    ]


def test_message_cut_off_mid_content_is_finished_by_close():
    parser, events = parse(tokens("<|channel|>final<|message|>partial answer"), close=False)
    assert not finished(events)
    closing = parser.close()
    assert closing == [MessageFinished(kind="message", recipient=None, name=None, text="partial answer")]
    assert parser.last_stop_token is None


def test_close_without_any_output_is_not_an_error():
    assert OutputParser().close() == []


def test_counts_output_and_reasoning_tokens():
    parser, _ = parse(tokens(CALL))
    analysis = tokens("<|channel|>analysis<|message|>Need weather.<|end|>")
    assert parser.output_tokens == len(tokens(CALL))
    assert parser.reasoning_tokens == len(analysis)


def test_last_stop_token_is_return_after_a_final_answer():
    parser, _ = parse(tokens("<|channel|>final<|message|>Done<|return|>"))
    assert parser.last_stop_token == special_token_id("<|return|>")


@pytest.mark.parametrize(
    "markup",
    [
        "<|channel|>final<|message|>x<|start|>garbage",  # a special token inside content
        "<|channel|>final hello<|end|>",  # a header without <|message|>
        "<|channel|>final<|message|>x<|end|>garbage",  # text where a new message must start
        "<|channel|>final<|message|>x<|end|><|start|>user<|message|>hi<|end|>",  # not the assistant
        "<|channel|>gossip<|message|>x<|end|>",  # an unknown channel
    ],
)
def test_malformed_output_raises_harmony_output_error(markup):
    with pytest.raises(HarmonyOutputError):
        parse(tokens(markup))


def test_token_id_outside_the_vocabulary_raises_harmony_output_error():
    parser, _ = parse(tokens("<|channel|>final<|message|>a"), close=False)
    with pytest.raises(HarmonyOutputError, match="outside"):
        parser.feed(10**6)


def test_header_cut_off_by_the_end_of_the_stream_raises_on_close():
    parser, _ = parse(tokens("<|channel|>final"), close=False)
    with pytest.raises(HarmonyOutputError, match="header"):
        parser.close()


def test_parser_stays_failed_after_rejecting_output():
    parser = OutputParser()
    with pytest.raises(HarmonyOutputError):
        for token in tokens("<|channel|>final hello<|end|>"):
            parser.feed(token)
    with pytest.raises(HarmonyOutputError):
        parser.feed(tokens("x")[0])


def test_a_prefilled_header_is_parsed_but_counted_as_input():
    parser = OutputParser()
    events = parser.prefill(tokens("<|channel|>analysis to=python code<|message|>"))
    assert [type(event) for event in events] == [MessageStarted]
    assert (parser.output_tokens, parser.reasoning_tokens) == (0, 0)
    events = [event for token_id in tokens("print(1)<|call|>") for event in parser.feed(token_id)]
    assert finished(events) == [MessageFinished(kind="tool_call", recipient="python", name=None, text="print(1)")]
    assert parser.output_tokens == parser.reasoning_tokens == len(tokens("print(1)<|call|>"))
