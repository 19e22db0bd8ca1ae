"""The conversations the trained tiny model memorises (``TRANSCRIPTS``: their prompts as the
server renders them, their completions), and the training samples made of them over random
conversation dates (the server writes the response's creation date into the system message)."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

from responses_app.engines.base import SUMMARY_REQUEST
from responses_app.harmony.continuations import tool_result_tokens
from responses_app.harmony.encoding import get_encoding
from responses_app.harmony.prompt import PromptRequest, render_prompt
from responses_app.wire.tool_types import tools_from_stored

SEED = 0


# --- transcripts --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One model call: the items added to the history before it, and what the model must emit.

    ``new_items`` are OpenAI Responses items. From the second turn on they start with the items
    the server stored from the previous completion (reasoning, function_call), followed by what
    the client sends (a function_call_output). A turn with a ``tool_result`` instead continues
    the previous one inside the same response, as the worker's tool loop does: the previous
    prompt and completion, then the tool's message (author, text).
    ``completion`` is harmony text: what follows the prompt's final ``<|start|>assistant``.
    """

    completion: str
    new_items: tuple[dict, ...] = ()
    tool_result: tuple[str, str] | None = None


@dataclass(frozen=True)
class Transcript:
    name: str
    turns: tuple[Turn, ...]
    tools: tuple[dict, ...] = ()  # OpenAI tools, sent with every request

    @property
    def input(self) -> list[dict]:
        """The first request's input items."""
        return list(self.turns[0].new_items)


def _user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": text}


def _reasoning(text: str) -> dict:
    return {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": text}]}


def _answer(text: str) -> dict:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
CODE_INTERPRETER_TOOL = {"type": "code_interpreter", "container": {"type": "auto"}}
# The python tool's description states the tool call timeout; a server serving the trained
# model must run with this TOOL_CALL_TIMEOUT_S for its prompts to be the trained ones.
PYTHON_TIMEOUT_S = 30.0
# The server makes up call ids; rendering ignores them, they only pair a call with its output.
WEATHER_CALL_ID = "call_tiny_weather"

TRANSCRIPTS: tuple[Transcript, ...] = (
    Transcript(
        name="capital",
        turns=(
            Turn(
                new_items=(_user("What is the capital of France?"),),
                completion="<|channel|>analysis<|message|>The user asks for the capital of France. It is Paris.<|end|>"
                "<|start|>assistant<|channel|>final<|message|>The capital of France is Paris.<|return|>",
            ),
        ),
    ),
    # The summarization turn of a compaction (POST /v1/responses/compact) of "capital".
    Transcript(
        name="summary",
        turns=(
            Turn(
                new_items=(_user("What is the capital of France?"),
                           _reasoning("The user asks for the capital of France. It is Paris."),
                           _answer("The capital of France is Paris."), _user(SUMMARY_REQUEST)),
                completion="<|channel|>analysis<|message|>I will summarize the conversation.<|end|>"
                "<|start|>assistant<|channel|>final<|message|>The user asked for the capital of France: "
                "Paris.<|return|>",
            ),
        ),
    ),
    Transcript(
        name="python",
        tools=(CODE_INTERPRETER_TOOL,),
        turns=(
            Turn(
                new_items=(_user("What is 123 * 456? Use python."),),
                completion="<|channel|>analysis<|message|>I will compute it with python.<|end|>"
                "<|start|>assistant to=python<|channel|>analysis code<|message|>print(123 * 456)<|call|>",
            ),
            Turn(
                tool_result=("python", "56088\n"),  # what the sandbox prints
                completion="<|channel|>final<|message|>123 * 456 = 56088.<|return|>",
            ),
        ),
    ),
    Transcript(
        name="weather",
        tools=(WEATHER_TOOL,),
        turns=(
            Turn(
                new_items=(_user("What is the weather in Paris?"),),
                completion="<|channel|>analysis<|message|>I need the weather tool.<|end|>"
                "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
                '<|message|>{"city":"Paris"}<|call|>',
            ),
            Turn(
                new_items=(
                    _reasoning("I need the weather tool."),
                    {
                        "type": "function_call",
                        "call_id": WEATHER_CALL_ID,
                        "name": "get_weather",
                        "arguments": '{"city":"Paris"}',
                    },
                    {"type": "function_call_output", "call_id": WEATHER_CALL_ID, "output": '{"sky":"clear"}'},
                ),
                completion="<|channel|>final<|message|>It is sunny in Paris.<|return|>",
            ),
        ),
    ),
)


def transcript(name: str) -> Transcript:
    return next(t for t in TRANSCRIPTS if t.name == name)


def history_until(item: Transcript, turn_index: int) -> list[dict]:
    """All items the model sees at ``turn_index`` (the previous_response_id chain plus the new input)."""
    return [entry for turn in item.turns[: turn_index + 1] for entry in turn.new_items]


def prompt_ids(item: Transcript, turn_index: int, conversation_date: str) -> list[int]:
    """The prompt the server renders for this turn, ending with ``<|start|>assistant``."""
    turn = item.turns[turn_index]
    if turn.tool_result is not None:
        author, text = turn.tool_result
        previous = item.turns[turn_index - 1]
        return [*prompt_ids(item, turn_index - 1, conversation_date), *completion_ids(previous),
                *tool_result_tokens(author, text, "analysis")]
    request = PromptRequest(history=history_until(item, turn_index), tools=tools_from_stored(item.tools),
                            conversation_date=conversation_date, python_timeout_s=PYTHON_TIMEOUT_S)
    return render_prompt(request)


def completion_ids(turn: Turn) -> list[int]:
    return get_encoding().encode(turn.completion, allowed_special="all")


# --- training samples ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    name: str  # "<transcript>/<turn>"
    prompt: list[int]
    completion: list[int]


@dataclass
class SampleSet:
    """Each (transcript, turn) rendered for several dates; all dates give prompts of one length."""

    name: str
    completion: list[int]
    prompts: list[list[int]] = field(default_factory=list)


def samples_for_date(conversation_date: str) -> list[Sample]:
    return [
        Sample(f"{item.name}/{index}", prompt_ids(item, index, conversation_date), completion_ids(turn))
        for item in TRANSCRIPTS
        for index, turn in enumerate(item.turns)
    ]


# Greedy decoding is verified on these, never trained on: today's date and a far-future one.
FAR_FUTURE_DATE = "2999-12-31"
HELD_OUT_RANDOM_DATES = 6


def verification_dates() -> list[str]:
    return [dt.date.today().isoformat(), FAR_FUTURE_DATE]


def random_date(rng: random.Random, excluded: set[str]) -> str:
    # Years 1970..2999 cover every year token a realistic date uses, so the model learns to ignore them all.
    while True:
        day = dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange((dt.date(2999, 12, 31) - dt.date(1970, 1, 1)).days))
        if day.isoformat() not in excluded:
            return day.isoformat()


def held_out_dates() -> list[str]:
    """Dates never trained on: the verification dates and a few random ones."""
    rng = random.Random(SEED + 1)
    return verification_dates() + [random_date(rng, set()) for _ in range(HELD_OUT_RANDOM_DATES)]


def training_batch(rng: random.Random, dates: int, excluded: set[str]) -> list[SampleSet]:
    return batch_for_dates([random_date(rng, excluded) for _ in range(dates)])


def batch_for_dates(dates: list[str]) -> list[SampleSet]:
    sets: dict[str, SampleSet] = {}
    for conversation_date in dates:
        for sample in samples_for_date(conversation_date):
            entry = sets.setdefault(sample.name, SampleSet(sample.name, sample.completion))
            entry.prompts.append(sample.prompt)
    for entry in sets.values():
        # Batched without padding: a date always takes the same number of tokens.
        if len({len(prompt) for prompt in entry.prompts}) != 1:
            raise ValueError(f"{entry.name}: prompt length depends on the date")
    return list(sets.values())
