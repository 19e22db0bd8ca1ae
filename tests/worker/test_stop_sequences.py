"""Stop sequences over an answer's text deltas: nothing of a sequence is ever shown, even
when it spans deltas; text that only looked like a sequence's start is shown once it is
known not to be; a delta's logprobs go out with the last of its text."""

from __future__ import annotations

import pytest

from responses_app.worker.stop_sequences import StopSequences

pytestmark = pytest.mark.core


def shown(sequences: tuple[str, ...], deltas: list[str]) -> tuple[list[str], bool]:
    stops = StopSequences(sequences)
    out = []
    for delta in deltas:
        out.append(stops.feed(delta)[0])
        if stops.reached:
            return out, True
    out.append(stops.flush()[0])
    return out, False


def test_a_sequence_inside_one_delta_ends_the_text_before_it():
    assert shown(("END",), ["Hello END world"]) == (["Hello "], True)


def test_a_sequence_across_deltas_is_held_back_and_never_shown():
    assert shown((" END",), ["Hello", " E", "N", "D more"]) == (["Hello", "", "", ""], True)


def test_a_false_start_is_shown_once_the_next_delta_rules_it_out():
    assert shown((" END",), ["Hello E", "N", "ough"]) == (["Hello", "", " ENough", ""], False)
    assert shown((" END",), ["Hello ", "EN", "!"]) == (["Hello", "", " EN!", ""], False)


def test_held_text_comes_at_the_messages_end():
    assert shown(("\n\n",), ["one\n"]) == (["one", "\n"], False)


def test_the_earliest_of_several_sequences_wins():
    assert shown(("b", "zz", "a"), ["xxabzz"]) == (["xx"], True)
    assert shown(("abc", "bc"), ["xa", "bc"]) == (["x", ""], True)


def token(n: int) -> list[list[tuple[int, float]]]:
    return [[(n, -0.5)]]


def test_a_deltas_logprobs_go_out_with_the_last_of_its_text():
    stops = StopSequences((" END",))
    assert stops.feed("Hello", token(1)) == ("Hello", token(1))
    assert stops.feed(" E", token(2)) == ("", [])  # held: it may begin the sequence
    assert stops.feed("xit", token(3)) == (" Exit", token(2) + token(3))
    assert stops.feed(" E", token(4)) == ("", [])
    assert stops.flush() == (" E", token(4))  # the message ended: no sequence came


def test_the_logprobs_of_deltas_the_sequence_cuts_go_nowhere():
    stops = StopSequences((" END",))
    assert stops.feed("Done.", token(1)) == ("Done.", token(1))
    assert stops.feed(" EN", token(2)) == ("", [])
    assert stops.feed("D and more", token(3)) == ("", [])
    assert stops.reached and stops.flush() == ("", [])


def test_a_delta_partly_shown_keeps_its_logprobs_until_the_rest_of_it_is():
    stops = StopSequences(("ab",))
    assert stops.feed("xxa", token(1)) == ("xx", [])
    assert stops.feed("c", token(2)) == ("ac", token(1) + token(2))
