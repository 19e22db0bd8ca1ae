"""Tiny gpt-oss checkpoints for tests: a random one and one trained on a few transcripts.

Both share one architecture (``model_config()``) that vLLM's CPU backend loads like a real
gpt-oss: the full o200k_harmony vocabulary (201088 ids), untied embeddings (vLLM's gpt-oss
always loads ``lm_head.weight``), head_dim 64 (the CPU attention backend rejects 16) and one
sliding plus one full attention layer. Weights are saved in float32: the trained model is
checked for exact greedy output, and bfloat16 rounding could flip a near-tie.

The trained model memorises ``TRANSCRIPTS``: for each prompt the server renders, greedy
decoding reproduces the expected completion exactly, whatever the conversation date (the
server writes the response's creation date into the system message).

Everything is built offline: the tokenizer comes from harmony's vocabulary file
(``o200k_base.tiktoken`` in HARMONY_VOCAB_DIR). torch and transformers are imported lazily,
so finding an already built model (``ensure_model``) needs neither.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from responses_app.devtools.transcripts import (
    SEED,
    TRANSCRIPTS,
    Sample,
    SampleSet,
    batch_for_dates,
    held_out_dates,
    samples_for_date,
    training_batch,
    verification_dates,
)
from responses_app.harmony.encoding import get_encoding, vocabulary_dir
from responses_app.harmony.vocab import VOCAB_FILE, VOCAB_SHA256, verify_vocabulary

if TYPE_CHECKING:
    from transformers import GptOssForCausalLM, PreTrainedTokenizerFast
    from vllm.config.model import ModelDType

# Bump whenever the build changes in a way the fingerprint cannot see (training recipe, files written).
BUILD_VERSION = 2
KINDS = ("random", "trained")
# The dtype the weights are saved in; vLLM must load them with dtype="float32" (see module docstring).
SAVED_DTYPE: Final = "float32"

RETURN_ID, CALL_ID = 200002, 200012  # <|return|>, <|call|>: the assistant's stop tokens
BOS_ID, PAD_ID = 199998, 199999  # <|startoftext|>, <|endoftext|>
FIRST_SPECIAL_ID, VOCAB_SIZE = 199998, 201088

# o200k's pre-tokenisation pattern (tiktoken_ext.openai_public.o200k_base); harmony uses the same.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
# o200k_harmony's special tokens occupy ids 199998..201087; the unnamed ones are reserved.
NAMED_SPECIALS = {
    199998: "<|startoftext|>",
    199999: "<|endoftext|>",
    200002: "<|return|>",
    200003: "<|constrain|>",
    200005: "<|channel|>",
    200006: "<|start|>",
    200007: "<|end|>",
    200008: "<|message|>",
    200012: "<|call|>",
    200018: "<|endofprompt|>",
}

MODEL_CONFIG: dict[str, Any] = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,  # the smallest head size vLLM's CPU attention accepts
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "sliding_window": 128,  # layer 0 slides, layer 1 attends fully (layer_types default)
    "vocab_size": VOCAB_SIZE,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,  # vLLM's GptOssForCausalLM has its own lm_head and never ties
    "eos_token_id": [RETURN_ID, CALL_ID],
    "pad_token_id": PAD_ID,
    "bos_token_id": BOS_ID,
}


@dataclass(frozen=True)
class TrainingRecipe:
    learning_rate: float = 5e-3
    dates_per_step: int = 2  # random conversation dates per prompt per optimiser step
    steps_per_round: int = 10  # between two held-out checks
    max_rounds: int = 40  # 8 rounds suffice (about a minute on 2 CPU cores); hitting 40 means the recipe broke
    # Every completion token must reach this probability before the greedy check runs: a margin
    # that keeps greedy decoding stable under vLLM's slightly different arithmetic.
    min_token_probability: float = 0.97


RECIPE = TrainingRecipe()


# --- tokenizer and model ------------------------------------------------------------------------


def special_tokens() -> list[str]:
    return [NAMED_SPECIALS.get(i, f"<|reserved_{i}|>") for i in range(FIRST_SPECIAL_ID, VOCAB_SIZE)]


def build_tokenizer(vocab_dir: Path | None = None) -> PreTrainedTokenizerFast:
    """An HF fast tokenizer equal to harmony's o200k_harmony, built offline from the vocabulary file."""
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    folder = vocab_dir or vocabulary_dir()
    verify_vocabulary(folder)
    # The specials are contiguous and listed in id order, so each gets its harmony id.
    converter = TikTokenConverter(
        vocab_file=str(folder / VOCAB_FILE), pattern=O200K_PATTERN, extra_special_tokens=special_tokens()
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=converter.converted(),
        bos_token=NAMED_SPECIALS[BOS_ID],
        eos_token=NAMED_SPECIALS[RETURN_ID],
        pad_token=NAMED_SPECIALS[PAD_ID],
        model_max_length=MODEL_CONFIG["max_position_embeddings"],
    )
    for token_id, text in NAMED_SPECIALS.items():
        if tokenizer.convert_tokens_to_ids(text) != token_id:
            raise RuntimeError(f"tokenizer gives {text} id {tokenizer.convert_tokens_to_ids(text)}, not {token_id}")
    return tokenizer


def new_model() -> GptOssForCausalLM:
    import torch
    from transformers import GptOssConfig, GptOssForCausalLM

    torch.manual_seed(SEED)
    config = GptOssConfig(**MODEL_CONFIG)
    # Eager attention: it implements gpt-oss's attention sinks and sliding window on CPU.
    config._attn_implementation = "eager"
    return GptOssForCausalLM(config).to(getattr(torch, SAVED_DTYPE))


def save(model: GptOssForCausalLM, tokenizer: PreTrainedTokenizerFast, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    model.generation_config.eos_token_id = [RETURN_ID, CALL_ID]
    model.generation_config.pad_token_id = PAD_ID
    model.generation_config.bos_token_id = BOS_ID
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def build_random_model(out: Path) -> Path:
    """A seeded random gpt-oss with the tiny architecture, plus its tokenizer, saved into ``out``."""
    return save(new_model(), build_tokenizer(), out)


# --- training -----------------------------------------------------------------------------------


class TrainingFailed(RuntimeError):
    pass


def build_trained_model(out: Path, recipe: TrainingRecipe = RECIPE, log: Callable[[str], None] = print) -> Path:
    """Train the tiny model until greedy decoding reproduces every transcript, then save it into ``out``."""
    import torch

    tokenizer = build_tokenizer()  # first: fails fast on a missing vocabulary
    model = new_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate, weight_decay=0.0)
    rng = random.Random(SEED)
    held_out = held_out_dates()
    started = time.monotonic()
    for round_index in range(recipe.max_rounds):
        for _ in range(recipe.steps_per_round):
            train_step(model, optimizer, training_batch(rng, recipe.dates_per_step, set(held_out)))
        # Judged on dates never trained on: the model must ignore the date, not memorise a few.
        lowest = lowest_probability(model, held_out)
        log(
            f"round {round_index + 1}: lowest held-out completion-token probability {lowest:.3f} "
            f"({time.monotonic() - started:.0f}s)"
        )
        if lowest < recipe.min_token_probability:
            continue
        mismatches = greedy_mismatches(model, verification_dates())
        if not mismatches:
            return save(model, tokenizer, out)
        log("greedy mismatches: " + "; ".join(mismatches))
    raise TrainingFailed(f"the tiny model did not learn the transcripts in {recipe.max_rounds} rounds")


def lowest_probability(model: GptOssForCausalLM, dates: list[str]) -> float:
    """The lowest teacher-forced probability of any completion token on ``dates``."""
    import torch

    model.eval()
    with torch.no_grad():
        return float(completion_log_probs(model, batch_for_dates(dates)).min().exp())


def train_step(model: GptOssForCausalLM, optimizer: Any, batch: list[SampleSet]) -> float:
    """One optimiser step over every sample set; returns the lowest completion-token probability seen."""
    import torch

    model.train()
    optimizer.zero_grad()
    log_probs = completion_log_probs(model, batch)
    (-log_probs.mean()).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return float(log_probs.detach().min().exp())


def completion_log_probs(model: GptOssForCausalLM, batch: list[SampleSet]) -> Any:
    """Log-probabilities of every completion token (teacher forced), flattened over the batch."""
    import torch

    hidden_states, targets = [], []
    for entry in batch:
        prompt_length = len(entry.prompts[0])
        ids = torch.tensor([prompt + entry.completion for prompt in entry.prompts])
        hidden = model.model(input_ids=ids[:, :-1]).last_hidden_state
        hidden_states.append(hidden[:, prompt_length - 1 :].reshape(-1, hidden.shape[-1]))
        targets.append(ids[:, prompt_length:].reshape(-1))
    # The loss covers the completions only, so only their positions go through the 201k-wide head,
    # and in one call: each head call allocates a dense gradient for the whole head.
    logits = model.lm_head(torch.cat(hidden_states))
    target = torch.cat(targets)
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)


def greedy_mismatches(model: GptOssForCausalLM, dates: list[str]) -> list[str]:
    """Describe each (sample, date) whose greedy completion differs from the transcript's."""
    mismatches = []
    for conversation_date in dates:
        for sample in samples_for_date(conversation_date):
            generated = greedy_completion(model, sample.prompt, max_new_tokens=len(sample.completion) + 8)
            if generated != sample.completion:
                text = get_encoding().decode(generated)
                mismatches.append(f"{sample.name} on {conversation_date}: {text!r}")
    return mismatches


def greedy_completion(model: GptOssForCausalLM, prompt: list[int], max_new_tokens: int) -> list[int]:
    """Greedy decoding in torch, up to and including ``<|return|>`` or ``<|call|>``."""
    import torch

    model.eval()
    with torch.no_grad():
        # transformers types generate's self as a protocol (for ty) that its own models miss
        # under mypy (device and dtype read-only, hf_device_map).
        output = model.generate(  # type: ignore[misc]
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            eos_token_id=[RETURN_ID, CALL_ID],
            pad_token_id=PAD_ID,
        )
    return output[0, len(prompt) :].tolist()


# --- cache --------------------------------------------------------------------------------------

Builder = Callable[[Path], Path]
# Looked up at call time, so tests can swap a builder for a fake.
BUILDERS: dict[str, Builder] = {"random": build_random_model, "trained": build_trained_model}
# The rendered prompts are part of the fingerprint so that a harmony release that renders
# differently rebuilds the trained model; this date is just a fixed one to render them with.
FINGERPRINT_DATE = "2000-01-01"


def fingerprint(kind: str) -> str:
    """A short hash of everything a built model depends on."""
    payload = {
        "build_version": BUILD_VERSION,
        "kind": kind,
        "config": MODEL_CONFIG,
        "dtype": SAVED_DTYPE,
        "seed": SEED,
        "vocabulary": VOCAB_SHA256,
    }
    if kind == "trained":
        payload["recipe"] = asdict(RECIPE)
        payload["transcripts"] = [asdict(item) for item in TRANSCRIPTS]
        payload["prompts"] = [asdict(sample) for sample in samples_for_date(FINGERPRINT_DATE)]
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return digest[:12]


def model_dir(kind: str, cache_dir: Path) -> Path:
    return cache_dir / f"{kind}-{fingerprint(kind)}"


def ensure_model(kind: str, cache_dir: Path) -> Path:
    """The folder of the ``kind`` model ("random" or "trained"), built into ``cache_dir`` if missing."""
    if kind not in BUILDERS:
        raise ValueError(f"unknown tiny model kind {kind!r}; use one of {', '.join(BUILDERS)}")
    target = model_dir(kind, cache_dir)
    if target.is_dir():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    # One builder at a time per model: a second process waits, then finds the finished folder.
    with _file_lock(cache_dir / f".{target.name}.lock"):
        if target.is_dir():
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=cache_dir))
        try:
            BUILDERS[kind](staging)
            _make_readable(staging)
            # Renaming within one filesystem is atomic: the folder exists complete or not at all.
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _make_readable(folder: Path) -> None:
    # mkdtemp and safetensors create private files; a worker running as another user must read them.
    folder.chmod(0o755)
    for path in folder.iterdir():
        path.chmod(0o644)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --- vLLM check ---------------------------------------------------------------------------------


def vllm_greedy_mismatches(folder: Path, dates: list[str] | None = None,
                           dtype: ModelDType = SAVED_DTYPE) -> list[str]:
    """Greedy decoding of every transcript prompt through vLLM's AsyncLLM, all submitted at once.

    vLLM starts its engine core with multiprocessing "spawn": call this only from a script
    guarded by ``if __name__ == "__main__"`` (manage.py is).
    """
    import asyncio

    return asyncio.run(_vllm_greedy_mismatches(folder, dates or verification_dates(), dtype))


async def _vllm_greedy_mismatches(folder: Path, dates: list[str], dtype: ModelDType) -> list[str]:
    import asyncio

    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    engine = AsyncLLM.from_engine_args(
        AsyncEngineArgs(
            model=str(folder),
            dtype=dtype,
            max_model_len=2048,
            enforce_eager=True,
            kv_cache_memory_bytes=256 * 2**20,
            enable_prefix_caching=True,
        )
    )

    try:
        cases = [(d, s) for d in dates for s in samples_for_date(d)]
        results = await asyncio.gather(
            *(_vllm_greedy(engine, f"tiny-{index}", sample) for index, (_, sample) in enumerate(cases))
        )
    finally:
        engine.shutdown()
        del engine  # else its __del__ shuts it down again at interpreter exit, noisily
    return [
        f"{sample.name} on {conversation_date}: {get_encoding().decode(generated)!r}"
        for (conversation_date, sample), generated in zip(cases, results, strict=True)
        if generated != sample.completion
    ]


async def _vllm_greedy(engine: Any, request_id: str, sample: Sample) -> list[int]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    params = SamplingParams(
        temperature=0.0,
        max_tokens=len(sample.completion) + 8,
        stop_token_ids=[RETURN_ID, CALL_ID],
        detokenize=False,
    )
    final = None
    async for output in engine.generate(TokensPrompt(prompt_token_ids=sample.prompt), params, request_id):
        final = output
    return list(final.outputs[0].token_ids) if final else []
