"""The tiny test models' tokenizer, transcripts and cache; nothing here trains or loads a model."""

from __future__ import annotations

from pathlib import Path

import pytest
from openai_harmony import Role

from responses_app.devtools import tiny_models, transcripts
from responses_app.devtools.tiny_models import ensure_model
from responses_app.devtools.transcripts import TRANSCRIPTS, prompt_ids, transcript
from responses_app.harmony.encoding import get_encoding, stop_token_ids
from responses_app.harmony.prompt import PromptRequest, render_prompt
from responses_app.wire.tool_types import tools_from_stored

DATE = "2031-05-17"


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    return tiny_models.build_tokenizer()


def text_of(ids: list[int]) -> str:
    return get_encoding().decode(ids)


# --- tokenizer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Hello, world!",
        "  spaces   and\n\nnewlines\r\n",
        "Ünïcödé — 日本語 🚀",
        "def f(x):\n    return x**2  # it's 1234567",
        '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"a":1}<|call|>',
        "<|startoftext|><|endoftext|><|return|><|end|><|reserved_200013|>",
    ],
)
def test_tokenizer_encodes_like_harmony(tokenizer, text):
    expected = get_encoding().encode(text, allowed_special="all")
    assert tokenizer.encode(text, add_special_tokens=False) == expected
    assert tokenizer.decode(expected) == text


def test_tokenizer_decodes_rendered_prompts_like_harmony(tokenizer):
    for sample in transcripts.samples_for_date(DATE):
        ids = sample.prompt + sample.completion
        assert tokenizer.decode(ids) == text_of(ids)
    assert len(tokenizer) == tiny_models.VOCAB_SIZE


# --- transcripts -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["capital", "weather"])
def test_server_transcripts_are_rendered_by_render_prompt(name):
    item = transcript(name)
    for index in range(len(item.turns)):
        history = transcripts.history_until(item, index)
        expected = render_prompt(PromptRequest(history=history, tools=tools_from_stored(item.tools),
                                               conversation_date=DATE))
        assert prompt_ids(item, index, DATE) == expected


def test_weather_second_turn_sees_the_call_and_its_output():
    prompt = text_of(prompt_ids(transcript("weather"), 1, DATE))
    assert "I need the weather tool." in prompt
    assert '{"city":"Paris"}<|call|>' in prompt
    assert '<|message|>{"sky":"clear"}<|end|><|start|>assistant' in prompt
    assert prompt.endswith("<|start|>assistant")


def test_python_transcript_is_rendered_with_the_servers_code_interpreter_tool():
    item = transcript("python")
    request = PromptRequest(history=item.input, tools=tools_from_stored(item.tools), conversation_date=DATE,
                            python_timeout_s=transcripts.PYTHON_TIMEOUT_S)
    assert prompt_ids(item, 0, DATE) == render_prompt(request)
    assert "## python" in text_of(prompt_ids(item, 0, DATE))


def test_python_second_turn_is_the_tool_loops_continuation_of_the_first():
    item = transcript("python")
    first = prompt_ids(item, 0, DATE) + transcripts.completion_ids(item.turns[0])
    second = prompt_ids(item, 1, DATE)
    assert second[: len(first)] == first  # what vLLM's prefix cache reuses
    assert text_of(second[len(first) :]) == \
        "<|start|>python to=assistant<|channel|>analysis<|message|>56088\n<|end|><|start|>assistant"


def test_completions_parse_as_harmony_and_end_with_a_stop_token():
    encoding = get_encoding()
    for item in TRANSCRIPTS:
        for turn in item.turns:
            ids = transcripts.completion_ids(turn)
            assert ids[-1] in stop_token_ids()
            messages = encoding.parse_messages_from_completion_tokens(ids, Role.ASSISTANT)
            assert messages and all(message.channel for message in messages)
    call = get_encoding().parse_messages_from_completion_tokens(
        transcripts.completion_ids(transcript("weather").turns[0]), Role.ASSISTANT
    )[-1]
    assert (call.recipient, call.content[0].text) == ("functions.get_weather", '{"city":"Paris"}')


def test_prompt_lengths_do_not_depend_on_the_date():
    # Training batches one prompt over many dates without padding.
    batch = transcripts.batch_for_dates(["1970-01-01", "2999-12-31", DATE])
    assert len(batch) == sum(len(item.turns) for item in TRANSCRIPTS)
    assert all(len(entry.prompts) == 3 for entry in batch)


def test_held_out_dates_include_today_and_are_never_trained_on():
    held_out = transcripts.held_out_dates()
    assert set(transcripts.verification_dates()) <= set(held_out)
    rng = transcripts.random.Random(0)
    assert all(transcripts.random_date(rng, set(held_out)) not in held_out for _ in range(200))


# --- cache -------------------------------------------------------------------------------------


@pytest.fixture
def fake_builder(monkeypatch):
    calls: list[Path] = []

    def build(out: Path) -> Path:
        calls.append(out)
        (out / "config.json").write_text("{}")
        return out

    monkeypatch.setitem(tiny_models.BUILDERS, "random", build)
    return calls


def test_ensure_model_builds_once_then_reuses_the_folder(tmp_path, fake_builder):
    first = ensure_model("random", tmp_path)
    second = ensure_model("random", tmp_path)
    assert first == second == tmp_path / f"random-{tiny_models.fingerprint('random')}"
    assert len(fake_builder) == 1
    assert (first / "config.json").exists()
    # Built elsewhere, then renamed: no staging folder is left behind.
    assert [path.name for path in tmp_path.iterdir() if not path.name.endswith(".lock")] == [first.name]


def test_ensure_model_leaves_nothing_when_the_build_fails(tmp_path, monkeypatch):
    def broken(out: Path) -> Path:
        (out / "partial").write_text("x")
        raise RuntimeError("boom")

    monkeypatch.setitem(tiny_models.BUILDERS, "trained", broken)
    with pytest.raises(RuntimeError, match="boom"):
        ensure_model("trained", tmp_path)
    assert [path for path in tmp_path.iterdir() if not path.name.endswith(".lock")] == []


def test_ensure_model_rejects_unknown_kinds(tmp_path):
    with pytest.raises(ValueError, match="unknown tiny model kind"):
        ensure_model("huge", tmp_path)


def test_fingerprint_follows_the_build_inputs(monkeypatch):
    random_before, trained_before = tiny_models.fingerprint("random"), tiny_models.fingerprint("trained")
    assert random_before != trained_before
    monkeypatch.setattr(tiny_models, "BUILD_VERSION", tiny_models.BUILD_VERSION + 1)
    assert tiny_models.fingerprint("random") != random_before
    monkeypatch.undo()
    changed = (transcripts.Transcript("extra", (transcripts.Turn("x", ({"role": "user", "content": "hi"},)),)),)
    monkeypatch.setattr(tiny_models, "TRANSCRIPTS", TRANSCRIPTS + changed)
    assert tiny_models.fingerprint("trained") != trained_before
    assert tiny_models.fingerprint("random") == random_before
