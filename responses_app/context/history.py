"""A response's context: the previous_response_id chain or the conversation's items, and
the harmony prompt.

The create path renders the prompt once to refuse what can never run (an unanswered
function call output, a prompt longer than the model's context) with a 400; the worker
renders it again, from the same rows, to generate.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django.conf import settings

from responses_app import selectors
from responses_app.context import truncation
from responses_app.context.compaction import as_prompt_item, compacted
from responses_app.harmony.messages import PromptError
from responses_app.harmony.prompt import PromptRequest, render_prompt
from responses_app.models import Response
from responses_app.models.response_params import ResponseParams
from responses_app.wire.errors import InvalidRequest


class ChainBroken(Exception):
    """A response of the chain was deleted after this one was created."""


class PromptTooLong(Exception):
    """The prompt leaves no room for output in the model's context."""

    def __init__(self, prompt_tokens: int, max_model_len: int) -> None:
        super().__init__(f"This model's maximum context length is {max_model_len} tokens; the conversation is "
                         f"{prompt_tokens} tokens, leaving no room for output.")


def previous_chain(tenant_id: int, previous_response_id: str | None) -> list[Response]:
    """The responses before this one, oldest first."""
    chain: list[Response] = []
    while previous_response_id:
        previous = Response.objects.filter(pk=previous_response_id, tenant_id=tenant_id).first()
        if previous is None:
            raise ChainBroken(f"Previous response '{previous_response_id}' no longer exists.")
        chain.append(previous)
        previous_response_id = previous.previous_response_id
    return chain[::-1]


def history(chain: list[Response], input_items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Input and output items of the chain, then this response's input items."""
    items: list[dict[str, Any]] = []
    for earlier in chain:
        items += selectors.input_items(earlier) + selectors.output_items(earlier)
    return items + input_items


def prompt_request(params: ResponseParams, items: list[dict[str, Any]], day: date) -> PromptRequest:
    return PromptRequest(
        history=[as_prompt_item(item) for item in compacted(items)],
        instructions=params.instructions,
        reasoning_effort=params.reasoning.effort,
        verbosity=params.text.verbosity,
        tools=params.tools,
        tool_choice=params.tool_choice,
        conversation_date=day.isoformat(),
        mcp_listings=[item for item in items if item.get("type") == "mcp_list_tools"],
        python_timeout_s=settings.TOOL_CALL_TIMEOUT_S,
    )


def response_history(response: Response) -> list[dict[str, Any]]:
    """The items before this response's output: its conversation's or its chain's, then its
    input (raises ChainBroken). A conversation's items cannot change while the response
    works on it (conversations/store.py), so every turn of the worker reads the same."""
    if response.conversation_id:
        return selectors.conversation_items(response.conversation_id) + selectors.input_items(response)
    return history(previous_chain(response.tenant_id, response.previous_response_id), selectors.input_items(response))


def response_prompt(response: Response, output: list[dict[str, Any]] | None = None,
                    items: list[dict[str, Any]] | None = None) -> tuple[list[int], int]:
    """The prompt token ids of a stored response, after the ``output`` items it has so far,
    and how many history items truncation "auto" dropped to fit them (raises ChainBroken,
    PromptError, PromptTooLong). ``items``: its history, if already read."""
    if items is None:
        items = response_history(response)
    return fit_prompt(response.model, response.params, items, list(output or []), response.created_at.date())


def fit_prompt(model: str, params: ResponseParams, items: list[dict[str, Any]], output: list[dict[str, Any]],
               day: date) -> tuple[list[int], int]:
    """(prompt, history items dropped): the whole prompt when it fits the model's context;
    else, with truncation "auto", the prompt less the fewest items from the start of
    ``items`` (context/truncation.py); else PromptTooLong."""
    def render(kept: list[dict[str, Any]]) -> list[int]:
        return render_prompt(prompt_request(params, kept, day))

    prompt = render(items + output)
    max_model_len = settings.MODEL_REGISTRY[model].get("max_model_len")
    if not max_model_len or len(prompt) < max_model_len:
        return prompt, 0
    fitted = truncation.fit(items, output, render, max_model_len) if params.truncation == "auto" else None
    if fitted is None:
        raise PromptTooLong(len(prompt), max_model_len)
    return fitted


def check_prompt(model: str, params: ResponseParams, items: list[dict[str, Any]], day: date) -> int:
    """Render the prompt of a response about to be created: its length in tokens (after
    any truncation), or a 400 if it can never run."""
    try:
        return len(fit_prompt(model, params, items, [], day)[0])
    except PromptError as error:
        raise InvalidRequest(str(error), param="input") from error
    except PromptTooLong as error:
        raise InvalidRequest(str(error), param="input", code="context_length_exceeded") from error
