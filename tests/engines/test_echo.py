"""The deterministic echo engine."""

from __future__ import annotations

import asyncio
import time

from responses_app.engines.base import EngineChunk, SamplingParams
from responses_app.engines.echo import EchoEngine
from responses_app.harmony.continuations import forced_call_prefix
from responses_app.harmony.encoding import get_encoding, special_token_id, stop_token_ids
from responses_app.harmony.parser import MessageFinished, OutputParser
from responses_app.harmony.prompt import PromptRequest, render_prompt
from responses_app.models.response_params import ToolChoice
from responses_app.wire.tool_types import tools_from_stored

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
FIRST_SEGMENT = (
    "<|channel|>analysis<|message|>think<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city":"Paris"}<|call|>'
)
SECOND_SEGMENT = "<|channel|>final<|message|>Sunny in Paris.<|return|>"
SCRIPT = FIRST_SEGMENT + SECOND_SEGMENT
STOPS = SamplingParams(stop_token_ids=stop_token_ids())


def prompt(*history: dict) -> list[int]:
    return render_prompt(PromptRequest(history=list(history), tools=tools_from_stored([WEATHER_TOOL])))


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def collect(engine: EchoEngine, prompt_ids: list[int], params: SamplingParams = STOPS, rid: str = "r") -> list:
    async def run() -> list[EngineChunk]:
        return [chunk async for chunk in engine.generate(prompt_ids, params, rid)]

    return asyncio.run(run())


def output_text(chunks: list[EngineChunk]) -> str:
    return get_encoding().decode([token for chunk in chunks for token in chunk.token_ids])


def parsed(chunks: list[EngineChunk]) -> list[MessageFinished]:
    parser = OutputParser()
    events = [event for chunk in chunks for token in chunk.token_ids for event in parser.feed(token)]
    events += parser.close()
    return [event for event in events if isinstance(event, MessageFinished)]


def test_plain_input_gets_analysis_then_final_answer_quoting_it():
    chunks = collect(EchoEngine(), prompt(user("Hello there")))
    messages = parsed(chunks)
    assert [(m.kind, m.text) for m in messages] == [
        ("reasoning", 'The user wrote: "Hello there". I will echo it back.'),
        ("message", "You said: Hello there"),
    ]
    assert chunks[-1].token_ids[-1] == special_token_id("<|return|>")


def test_echo_answers_the_last_user_message_and_keeps_special_looking_text_plain():
    history = [user("first"), {"role": "assistant", "content": "You said: first"}, user("héllo <|end|> 🎉")]
    messages = parsed(collect(EchoEngine(), prompt(*history)))
    assert messages[-1].text == "You said: héllo <|end|> 🎉"


def test_chunks_hold_at_most_three_tokens_and_report_zero_cached_tokens_first():
    chunks = collect(EchoEngine(), prompt(user("Hello there")))
    assert all(1 <= len(chunk.token_ids) <= 3 for chunk in chunks)
    assert chunks[0].cached_tokens == 0
    assert all(chunk.cached_tokens is None for chunk in chunks[1:])


def test_script_outputs_its_markup_up_to_the_first_call():
    chunks = collect(EchoEngine(), prompt(user(SCRIPT)))
    assert output_text(chunks) == FIRST_SEGMENT
    assert [(m.kind, m.name, m.text) for m in parsed(chunks)] == [
        ("reasoning", None, "think"),
        ("function_call", "get_weather", '{"city":"Paris"}'),
    ]


def test_script_continues_after_the_segments_the_prompt_already_holds():
    engine = EchoEngine()
    history = [
        user(SCRIPT),
        {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "think"}], "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"sky":"clear"}'},
    ]
    assert output_text(collect(engine, prompt(*history))) == SECOND_SEGMENT


def test_script_continuation_does_not_depend_on_the_reasoning_being_in_the_prompt():
    history = [
        user(SCRIPT),
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
    ]
    assert output_text(collect(EchoEngine(), prompt(*history))) == SECOND_SEGMENT


def test_script_segment_may_repeat_the_assistant_start_after_a_call():
    script = FIRST_SEGMENT + "<|start|>assistant" + SECOND_SEGMENT
    history = [
        user(script),
        {"type": "function_call", "call_id": "c", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
    ]
    assert output_text(collect(EchoEngine(), prompt(*history))) == SECOND_SEGMENT


def test_exhausted_script_says_so_in_a_final_answer():
    history = [
        user(FIRST_SEGMENT),
        {"type": "function_call", "call_id": "c", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
    ]
    messages = parsed(collect(EchoEngine(), prompt(*history)))
    assert [m.kind for m in messages] == ["message"] and "no more segments" in messages[0].text


def test_script_without_a_stop_token_is_output_to_its_end():
    script = "<|channel|>final<|message|>cut"
    assert output_text(collect(EchoEngine(), prompt(user(script)))) == script


def test_max_tokens_stops_the_output_after_that_many_tokens():
    chunks = collect(EchoEngine(), prompt(user("Hello there")), SamplingParams(max_tokens=5))
    assert sum(len(chunk.token_ids) for chunk in chunks) == 5


def test_stop_token_ids_stop_right_after_the_stop_token():
    end = special_token_id("<|end|>")
    chunks = collect(EchoEngine(), prompt(user("Hello there")), SamplingParams(stop_token_ids=(end,)))
    ids = [token for chunk in chunks for token in chunk.token_ids]
    assert ids[-1] == end and ids.count(end) == 1


def test_with_a_delay_each_token_is_yielded_as_soon_as_it_is_generated():
    params = SamplingParams(stop_token_ids=stop_token_ids(), metadata={"echo_token_delay_ms": "1"})
    chunks = collect(EchoEngine(), prompt(user("hi")), params)
    assert all(len(chunk.token_ids) == 1 for chunk in chunks)


def test_a_delay_sets_the_rate_and_a_late_wake_up_does_not_lower_it():
    # A synthetic node load (bench/costs.py --node) offers a rate through the delay: a loop
    # that stalls must not stretch every later token's wait.
    params = SamplingParams(metadata={"echo_token_delay_ms": "10"})
    text = "<|channel|>final<|message|>" + "w " * 30 + "<|return|>"

    async def run() -> tuple[int, float, float]:
        loop, arrivals = asyncio.get_running_loop(), []
        started = loop.time()
        async for chunk in EchoEngine().generate(prompt(user(text)), params, "r"):
            if not arrivals:
                loop.call_later(0.02, time.sleep, 0.3)  # the loop is stuck for 300 ms, once
            arrivals += [loop.time()] * len(chunk.token_ids)
        return len(arrivals), arrivals[-1] - started, arrivals[-1] - arrivals[0]

    tokens, since_start, since_first = asyncio.run(run())
    # Each token is due 10 ms after the one before (the first 10 ms after the stream began),
    # so none comes early: the whole answer takes at least tokens * 10 ms. (Timed from the
    # first token instead, a first token that came late makes it look early.)
    assert since_start >= tokens * 0.010
    # Paced from the due times: the stall is made up, not added (a wait after each token
    # would take another 300 ms).
    assert since_first < (tokens - 1) * 0.010 + 0.2


def test_abort_stops_a_running_request_within_one_token():
    engine = EchoEngine(default_token_delay_ms=2)

    async def scenario() -> tuple[int, set[str], set[str]]:
        received = 0
        running_during = set()
        async for chunk in engine.generate(prompt(user("a long enough message to abort")), STOPS, "req-1"):
            received += len(chunk.token_ids)
            if received == 3:
                running_during = engine.running_requests()
                await engine.abort("req-1")
        return received, running_during, engine.running_requests()

    received, running_during, running_after = asyncio.run(scenario())
    assert running_during == {"req-1"}
    assert received <= 4
    assert running_after == set()
    assert engine.aborted_requests() == ["req-1"]


def test_abort_from_another_task_ends_the_stream_and_leaves_others_running():
    engine = EchoEngine(default_token_delay_ms=1)
    full = len([t for c in collect(EchoEngine(), prompt(user("x" * 20))) for t in c.token_ids])

    async def consume(rid: str) -> int:
        return sum([len(chunk.token_ids) async for chunk in engine.generate(prompt(user("x" * 20)), STOPS, rid)])

    async def scenario() -> tuple[int, int]:
        victim = asyncio.create_task(consume("victim"))
        survivor = asyncio.create_task(consume("survivor"))
        await asyncio.sleep(0.01)
        await engine.abort("victim")
        return await victim, await survivor

    victim_tokens, survivor_tokens = asyncio.run(scenario())
    assert victim_tokens < full
    assert survivor_tokens == full
    assert engine.running_requests() == set()
    assert engine.aborted_requests() == ["victim"]


def test_aborted_history_is_bounded():
    engine = EchoEngine()

    async def abort_many() -> None:
        for index in range(1500):
            await engine.abort(f"r{index}")

    asyncio.run(abort_many())
    aborted = engine.aborted_requests()
    assert len(aborted) == 1000 and aborted[-1] == "r1499"


def test_concurrent_requests_on_one_loop_get_their_own_answers():
    engine = EchoEngine()

    async def answer(text: str, rid: str) -> str:
        chunks = [chunk async for chunk in engine.generate(prompt(user(text)), STOPS, rid)]
        return parsed(chunks)[-1].text

    async def scenario() -> list[str]:
        return await asyncio.gather(*(answer(f"message {i}", f"r{i}") for i in range(5)))

    assert asyncio.run(scenario()) == [f"You said: message {i}" for i in range(5)]


def continued(history_prompt: list[int], written: str) -> list[int]:
    """A prompt that ends with what a lost worker had committed of the assistant's turn."""
    return history_prompt + get_encoding().encode(written, allowed_special="all")


def test_a_script_goes_on_exactly_after_the_messages_and_the_part_already_written():
    start = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>"
    script, written = start + "Sunny in Paris.<|return|>", start + "Sun"
    assert output_text(collect(EchoEngine(), continued(prompt(user(script)), written))) == "ny in Paris.<|return|>"


def test_a_plain_answer_and_a_call_go_on_after_what_was_written():
    reasoning = '<|channel|>analysis<|message|>The user wrote: "Hello there". I will echo it back.<|end|>'
    written = reasoning + "<|start|>assistant<|channel|>final<|message|>You said: Hel"
    assert output_text(collect(EchoEngine(), continued(prompt(user("Hello there")), written))) == "lo there<|return|>"
    call = FIRST_SEGMENT[: FIRST_SEGMENT.index('Paris"}')]
    assert output_text(collect(EchoEngine(), continued(prompt(user(SCRIPT)), call))) == 'Paris"}<|call|>'


def test_after_a_call_the_next_segment_goes_on_from_its_own_start():
    history = [user(SCRIPT),
               {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
               {"type": "function_call_output", "call_id": "call_1", "output": "ok"}]
    written = "<|channel|>final<|message|>Sunny in"
    assert output_text(collect(EchoEngine(), continued(prompt(*history), written))) == " Paris.<|return|>"


def forced(tools: list[dict], sent: str | dict, text: str = "Where do sea otters sleep?") -> str:
    """What the echo engine writes after the call header a forcing tool_choice prefills."""
    tool_choice = ToolChoice.from_stored(sent)
    typed = tools_from_stored(tools)
    request = PromptRequest(history=[user(text)], tools=typed, tool_choice=tool_choice)
    prefill = forced_call_prefix(tool_choice, typed)
    return get_encoding().decode(prefill) + output_text(collect(EchoEngine(), render_prompt(request) + prefill))


def test_a_forced_hosted_tool_gets_a_valid_call_made_from_the_users_text():
    question = "Where do sea otters sleep?"
    assert forced([{"type": "file_search", "vector_store_ids": ["vs_1"]}], {"type": "file_search"}) == (
        "<|channel|>analysis to=file_search.msearch <|constrain|>json<|message|>"
        f'{{"queries": ["{question}"]}}<|call|>')
    assert forced([{"type": "web_search"}], {"type": "web_search_preview"}) == (
        f'<|channel|>analysis to=browser.search code<|message|>{{"query": "{question}"}}<|call|>')
    assert forced([{"type": "code_interpreter", "container": {"type": "auto"}}], {"type": "code_interpreter"}) == (
        f"<|channel|>analysis to=python code<|message|>print('{question}')<|call|>")
    assert forced([WEATHER_TOOL], {"type": "function", "name": "get_weather"}) == (
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>")


def test_an_open_call_header_is_completed_with_the_prompts_first_tool_that_fits():
    other = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
    assert forced([WEATHER_TOOL, other], "required") == (
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>")
    namespace = {"type": "namespace", "name": "crm", "description": "The CRM.", "tools": [other]}
    assert forced([WEATHER_TOOL, namespace], {"type": "namespace", "name": "crm"}) == (
        "<|channel|>commentary to=crm.get_time <|constrain|>json<|message|>{}<|call|>")
    for call, kind, recipient in (
            (forced([WEATHER_TOOL, other], "required"), "function_call", "functions.get_weather"),
            (forced([WEATHER_TOOL, namespace], {"type": "namespace", "name": "crm"}), "tool_call", "crm.get_time")):
        [message] = parsed_text(call)  # valid harmony, a whole call
        assert (message.kind, message.recipient, message.text) == (kind, recipient, "{}")


def parsed_text(text: str) -> list[MessageFinished]:
    parser = OutputParser()
    tokens = get_encoding().encode(text, allowed_special="all")
    events = [event for token in tokens for event in parser.feed(token)] + parser.close()
    return [event for event in events if isinstance(event, MessageFinished)]
