"""fa3lite as a Hugging Face transformers attention backend (fa3lite.integrations.transformers).

Tiny random models of Llama, Mistral (sliding window), Qwen2 (GQA), Gemma 2 (softcap and sliding window)
and gpt-oss (sinks and sliding window) with attn_implementation="fa3lite" against transformers' own
attention ("sdpa", or "eager" for the models without SDPA): logits, left-padded and packed batches,
greedy generation with the KV cache (dynamic and static), training steps. On the CPU in float32 (fa3lite's
torch fallback, tight tolerance); on a Hopper GPU in bfloat16 with no FallbackWarning allowed (the
kernels ran). Then the attention function's own cases: 4-D masks, fallbacks to torch, decode steps,
the sliding-window translation, padding-free keywords, the mask function, argument errors.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import inspect
import types
import warnings

import pytest
import torch

import fa3lite

transformers = pytest.importorskip("transformers")

from fa3lite.integrations import _hf_fallback, _hf_masks, _hf_options  # noqa: E402
from fa3lite.integrations import transformers as fa3lite_hf  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::fa3lite.FallbackWarning")

VOCAB = 128
LAYERS = 2
HEADS = 4
KV_HEADS = 2              # GQA: two query heads per key/value head
HEAD_DIM = 16             # hidden size HEADS * HEAD_DIM = 64
GPU_HEAD_DIM = 64         # the kernels' smallest head dim (16 would send the GPU to the torch fallback)
MLP_RATIO = 2             # intermediate size / hidden size
# gpt-oss's MoE, tiny, every token routed to every expert: with top-k < experts a bf16 rounding
# difference in attention can flip a token to another expert, a jump in its logits that says
# nothing about attention (seen on the GPU: 2% of logits off by up to 0.57 with top-2 of 4).
EXPERTS = EXPERTS_PER_TOKEN = 4
GEMMA2_ATTN_SOFTCAP, GEMMA2_FINAL_SOFTCAP = 50.0, 30.0   # Gemma 2's own values
WINDOW = 8                # sliding window, well below SEQLEN so that it cuts
SEQLEN = 24
PADDED_LENGTHS = [SEQLEN, SEQLEN - 7, WINDOW + 1]    # a full row, a shorter one, one just past the window
PACKED_LENGTHS = [WINDOW + 1, WINDOW - 1, WINDOW]    # around the window
PROMPT_LENGTHS = [SEQLEN // 2, SEQLEN // 2 - 5]      # generate's prompts, the second left-padded
TRAIN_LENGTHS = [SEQLEN, SEQLEN - 9]
PAD_ID = 0
NEW_TOKENS = 16
GPU_NEW_TOKENS = 64       # issue 14's generation length on the GPU
TRAIN_STEPS = 3
LEARNING_RATE = 1e-3
SEED = 0
IGNORE_INDEX = -100       # transformers' label that the loss skips

# float32 on the CPU: fa3lite's torch math and transformers' differ only in summation order.
FP32_TOL = dict(atol=1e-5, rtol=1e-5)
# bfloat16: the tolerance transformers' own flash-attention equivalence tests use
# (flash_attn_inference_equivalence: atol = rtol = 4e-2).
BF16_TOL = dict(atol=4e-2, rtol=4e-2)


@dataclasses.dataclass(frozen=True)
class Spec:
    """A model family: its config and causal-LM classes, config keywords beyond the shared tiny ones,
    and transformers' attention to compare with."""

    name: str
    config: str
    model: str
    extra: dict
    reference: str

    def __str__(self):
        return self.name


SPECS = [
    Spec("llama", "LlamaConfig", "LlamaForCausalLM", {}, "sdpa"),
    Spec("mistral", "MistralConfig", "MistralForCausalLM", dict(sliding_window=WINDOW), "sdpa"),
    Spec("qwen2", "Qwen2Config", "Qwen2ForCausalLM", {}, "sdpa"),
    Spec("gemma2", "Gemma2Config", "Gemma2ForCausalLM",
         dict(sliding_window=WINDOW, attn_logit_softcapping=GEMMA2_ATTN_SOFTCAP,
              final_logit_softcapping=GEMMA2_FINAL_SOFTCAP), "eager"),
    Spec("gpt_oss", "GptOssConfig", "GptOssForCausalLM",
         dict(sliding_window=WINDOW, num_local_experts=EXPERTS, num_experts_per_tok=EXPERTS_PER_TOKEN), "eager"),
]
# Families whose config takes head_dim (and Gemma 2's query_pre_attn_scalar) instead of deriving it.
_EXPLICIT_HEAD_DIM = {"gemma2", "gpt_oss"}


@pytest.fixture(scope="module", autouse=True)
def _registered_one_thread():
    """register() once; tiny models on one CPU thread: with more, every small matmul pays OpenMP's
    fork/join, milliseconds on a shared two-core machine instead of microseconds."""
    fa3lite_hf.register()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
    # Later files expect their own first FallbackWarnings.
    fa3lite.checks.reset_fallback_warnings()
    _hf_fallback.reset_warnings()


def _classes(spec: Spec):
    config_cls, model_cls = getattr(transformers, spec.config, None), getattr(transformers, spec.model, None)
    if config_cls is None or model_cls is None:
        pytest.skip(f"transformers {transformers.__version__} has no {spec.model}")
    return config_cls, model_cls


def _models(spec: Spec, head_dim: int = HEAD_DIM, device="cpu", dtype=torch.float32):
    """(reference model, fa3lite model) of one tiny config with the same random weights, in eval mode."""
    config_cls, model_cls = _classes(spec)
    extra = dict(spec.extra)
    if spec.name in _EXPLICIT_HEAD_DIM:
        extra["head_dim"] = head_dim
    if spec.name == "gemma2":
        extra["query_pre_attn_scalar"] = head_dim
    config = config_cls(vocab_size=VOCAB, hidden_size=HEADS * head_dim, intermediate_size=MLP_RATIO * HEADS * head_dim,
                        num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                        pad_token_id=PAD_ID, **extra)
    torch.manual_seed(SEED)
    reference = model_cls._from_config(copy.deepcopy(config), attn_implementation=spec.reference)
    ours = model_cls._from_config(copy.deepcopy(config), attn_implementation="fa3lite")
    ours.load_state_dict(reference.state_dict())
    return tuple(m.to(device=device, dtype=dtype).eval() for m in (reference, ours))


def _tokens(lengths, seqlen, device="cpu"):
    """A left-padded batch: input_ids (B, seqlen), attention_mask (B, seqlen) and the position_ids
    generate would give (counting from each sequence's first token)."""
    g = torch.Generator().manual_seed(SEED)
    ids = torch.randint(PAD_ID + 1, VOCAB, (len(lengths), seqlen), generator=g)
    mask = torch.zeros(len(lengths), seqlen, dtype=torch.long)
    for row, n in enumerate(lengths):
        mask[row, seqlen - n:] = 1
    ids = ids.masked_fill(mask == 0, PAD_ID)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return dict(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device))


def _labels(batch):
    """Next-token labels that score no prediction made at a padding position: a sequence's first token
    is ignored too, since the last padding position would predict it (padding rows' outputs are a
    convention: zeros for fa3lite and SDPA, a uniform average in transformers' eager attention)."""
    ignored = batch["attention_mask"].cumsum(-1) <= 1
    return batch["input_ids"].masked_fill(ignored, IGNORE_INDEX)


@torch.no_grad()
def _logits(model, **inputs):
    return model(**inputs).logits.float()


@torch.no_grad()
def _stepwise_logits(model, batch, sequences):
    """(steps, B, vocab) float32: the logits greedy decoding sees at each step when the tokens it picks
    are `sequences`' (B, prompt + steps): the left-padded prompt through the model once, then one token
    a step through the model's KV cache, positions counted as generate() counts them."""
    mask = batch["attention_mask"]
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=batch["input_ids"], attention_mask=mask, position_ids=positions, use_cache=True)
    steps = [out.logits[:, -1].float()]
    for t in range(batch["input_ids"].shape[1], sequences.shape[1] - 1):
        mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=1)
        positions = positions[:, -1:] + 1
        out = model(input_ids=sequences[:, t:t + 1], attention_mask=mask, position_ids=positions,
                    past_key_values=out.past_key_values, use_cache=True)
        steps.append(out.logits[:, -1].float())
    return torch.stack(steps)


def _assert_same_or_tied_generation(reference, ours, batch, got, want, tol):
    """Greedy tokens equal, or (issue 14's allowance for bf16) they part where the reference's two
    choices were tied within `tol`, and with both models fed the reference's tokens the logits agree
    within `tol` at every step."""
    if torch.equal(got, want):
        return
    prompt = batch["input_ids"].shape[1]
    want_steps = _stepwise_logits(reference, batch, want)
    torch.testing.assert_close(_stepwise_logits(ours, batch, want), want_steps, **tol)
    row, col = (got != want).nonzero()[0].tolist()
    step = want_steps[col - prompt, row]
    chosen, other = step[want[row, col]], step[got[row, col]]
    assert chosen - other <= tol["atol"] + tol["rtol"] * chosen.abs(), (
        f"row {row} step {col - prompt}: fa3lite picked token {got[row, col].item()} ({other.item():.4f}) over "
        f"{want[row, col].item()} ({chosen.item():.4f}), not a tie within {tol}")


def _integration_fallbacks(caught) -> list[str]:
    return [str(w.message) for w in caught if str(w.message).startswith(_hf_fallback.WARNING_PREFIX)]


# ----------------------------------------------------------------------------------------- models, CPU
@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_logits_match_reference(spec):
    reference, ours = _models(spec)
    batch = _tokens([SEQLEN] * len(TRAIN_LENGTHS), SEQLEN)
    del batch["attention_mask"]
    torch.testing.assert_close(_logits(ours, **batch), _logits(reference, **batch), **FP32_TOL)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_left_padded_batch_matches_each_sequence_alone(spec):
    reference, ours = _models(spec)
    lengths = PADDED_LENGTHS
    batch = _tokens(lengths, SEQLEN)
    padded = _logits(ours, **batch)
    torch.testing.assert_close(padded[batch["attention_mask"].bool()],
                               _logits(reference, **batch)[batch["attention_mask"].bool()], **FP32_TOL)
    for row, n in enumerate(lengths):
        alone = _logits(ours, input_ids=batch["input_ids"][row:row + 1, SEQLEN - n:])
        torch.testing.assert_close(padded[row, SEQLEN - n:], alone[0], **FP32_TOL)


@pytest.mark.parametrize("use_cache", [False, True], ids=["mask", "position_ids"])
@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_packed_sequences_match_each_sequence_alone(spec, use_cache):
    """Without a cache transformers builds a 4-D mask of the packed sequences (the attention function
    checks it against their varlen layout); with one it builds none, and the attention function finds
    the sequences in position_ids, as transformers' FlashAttention path does."""
    _, ours = _models(spec)
    lengths = PACKED_LENGTHS
    ids = torch.randint(PAD_ID + 1, VOCAB, (1, sum(lengths)), generator=torch.Generator().manual_seed(SEED))
    positions = torch.cat([torch.arange(n) for n in lengths])[None]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        packed = _logits(ours, input_ids=ids, position_ids=positions, use_cache=use_cache)
    assert not _integration_fallbacks(caught)
    for chunk, alone_ids in zip(packed[0].split(lengths), ids[0].split(lengths)):
        torch.testing.assert_close(chunk, _logits(ours, input_ids=alone_ids[None])[0], **FP32_TOL)


@pytest.mark.parametrize("cache", ["dynamic", "static"])
@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_greedy_generation_matches_reference(spec, cache):
    if cache == "static" and spec.name == "gpt_oss":
        pytest.skip("gpt-oss's MoE under a static cache is a compile-oriented path outside this backend's scope")
    reference, ours = _models(spec)
    batch = _tokens(PROMPT_LENGTHS, PROMPT_LENGTHS[0])
    del batch["position_ids"]
    settings = dict(max_new_tokens=NEW_TOKENS, do_sample=False, output_logits=True, return_dict_in_generate=True,
                    cache_implementation=cache if cache == "static" else None)
    with torch.no_grad():
        want = reference.generate(**batch, **settings)
        got = ours.generate(**batch, **settings)
    assert torch.equal(got.sequences, want.sequences)
    torch.testing.assert_close(torch.stack(got.logits), torch.stack(want.logits), **FP32_TOL)
    if cache == "dynamic":
        # The GPU test's tie check feeds tokens step by step; its logits must be generate()'s own.
        torch.testing.assert_close(_stepwise_logits(ours, batch, want.sequences), torch.stack(want.logits),
                                   **FP32_TOL)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_training_steps_match_reference(spec):
    losses = {}
    batch = _tokens(TRAIN_LENGTHS, SEQLEN)
    labels = _labels(batch)
    for model in _models(spec):
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
        losses[model.config._attn_implementation] = []
        for _ in range(TRAIN_STEPS):
            optimizer.zero_grad()
            loss = model(**batch, labels=labels).loss
            loss.backward()
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            assert grads and all(torch.isfinite(g).all() for g in grads)
            optimizer.step()
            losses[model.config._attn_implementation].append(loss.item())
    torch.testing.assert_close(torch.tensor(losses["fa3lite"]), torch.tensor(losses[spec.reference]), **FP32_TOL)


# ----------------------------------------------------------------------------------- models, Hopper GPU
@contextlib.contextmanager
def _kernels_only():
    """Any FallbackWarning (fa3lite's own or the integration's) raises inside: the kernels ran. The
    once-per-process memories of both are cleared first, so an earlier warning cannot hide one."""
    fa3lite.checks.reset_fallback_warnings()
    _hf_fallback.reset_warnings()
    with warnings.catch_warnings():
        warnings.simplefilter("error", fa3lite.FallbackWarning)
        yield


@pytest.mark.gpu
@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_gpu_logits_padding_and_packing_on_the_kernels(spec):
    reference, ours = _models(spec, GPU_HEAD_DIM, "cuda", torch.bfloat16)
    lengths = PADDED_LENGTHS
    batch = _tokens(lengths, SEQLEN, "cuda")
    keep = batch["attention_mask"].bool()
    unpadded = _tokens([SEQLEN] * len(lengths), SEQLEN, "cuda")
    del unpadded["attention_mask"]
    want_unpadded, want_padded = _logits(reference, **unpadded), _logits(reference, **batch)
    ids = batch["input_ids"][keep][None]            # the sequences packed into one row, in row order
    positions = torch.cat([torch.arange(n, device="cuda") for n in lengths])[None]
    with _kernels_only():
        torch.testing.assert_close(_logits(ours, **unpadded), want_unpadded, **BF16_TOL)
        padded = _logits(ours, **batch)
        torch.testing.assert_close(padded[keep], want_padded[keep], **BF16_TOL)
        for row, n in enumerate(lengths):
            alone = _logits(ours, input_ids=batch["input_ids"][row:row + 1, SEQLEN - n:])
            torch.testing.assert_close(padded[row, SEQLEN - n:], alone[0], **BF16_TOL)
        for use_cache in (False, True):
            packed = _logits(ours, input_ids=ids, position_ids=positions, use_cache=use_cache)
            for chunk, alone_ids in zip(packed[0].split(lengths), ids[0].split(lengths)):
                torch.testing.assert_close(chunk, _logits(ours, input_ids=alone_ids[None])[0], **BF16_TOL)


@pytest.mark.gpu
@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_gpu_generation_on_the_kernels(spec):
    reference, ours = _models(spec, GPU_HEAD_DIM, "cuda", torch.bfloat16)
    batch = _tokens(PROMPT_LENGTHS, PROMPT_LENGTHS[0], "cuda")
    del batch["position_ids"]
    settings = dict(max_new_tokens=GPU_NEW_TOKENS, do_sample=False)
    with torch.no_grad():
        want = reference.generate(**batch, **settings)
        with _kernels_only():
            got = ours.generate(**batch, **settings)
            _assert_same_or_tied_generation(reference, ours, batch, got, want, BF16_TOL)


@pytest.mark.gpu
@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_gpu_training_steps_on_the_kernels(spec):
    batch = _tokens(TRAIN_LENGTHS, SEQLEN, "cuda")
    labels = _labels(batch)
    losses = {}
    for model in _models(spec, GPU_HEAD_DIM, "cuda", torch.bfloat16):
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
        name = model.config._attn_implementation
        losses[name] = []
        with _kernels_only() if name == "fa3lite" else contextlib.nullcontext():
            for _ in range(TRAIN_STEPS):
                optimizer.zero_grad()
                loss = model(**batch, labels=labels).loss
                loss.backward()
                assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
                optimizer.step()
                losses[name].append(loss.item())
    torch.testing.assert_close(torch.tensor(losses["fa3lite"]), torch.tensor(losses[spec.reference]), **BF16_TOL)


# -------------------------------------------------------------------------- the attention function itself
BATCH = 3
LEFT_PADDING = [0, 5, SEQLEN - 2]       # per row: none, some, all but two tokens
SOFTCAP = 5.0                           # small enough to bend the scores of unit-variance inputs
DROPOUT = 0.5


def _module(training=False):
    """What the attention function reads of a transformers attention module."""
    return types.SimpleNamespace(is_causal=True, num_key_value_groups=HEADS // KV_HEADS, training=training,
                                 layer_idx=0)


def _qkv(seqlen_q, seqlen_k, batch=BATCH, seed=SEED):
    """query (B, Hq, Sq, D), key and value (B, Hk, Sk, D), float32, as transformers passes them."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, HEADS, seqlen_q, HEAD_DIM, generator=g),
            torch.randn(batch, KV_HEADS, seqlen_k, HEAD_DIM, generator=g),
            torch.randn(batch, KV_HEADS, seqlen_k, HEAD_DIM, generator=g))


def _sdpa(module, query, key, value, mask, **kwargs):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward(module, query, key, value, mask, **kwargs)[0]


def _bottom_right(seqlen_q, seqlen_k, window=None, pad=None):
    """(B, 1, Sq, Sk) bool: causal aligned bottom-right, a window of ``window`` keys, left padding ``pad``
    keys per row -- transformers' pattern for queries that are the newest tokens."""
    rows = torch.arange(seqlen_q)[:, None] + seqlen_k - seqlen_q
    cols = torch.arange(seqlen_k)[None, :]
    allowed = cols <= rows
    if window is not None:
        allowed &= cols > rows - window
    pad = [0] * BATCH if pad is None else pad
    tokens = torch.stack([cols[0] >= p for p in pad])
    return (allowed[None] & tokens[:, None, :]).unsqueeze(1)


def _call(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, weights = fa3lite_hf.attention_forward(*args, **kwargs)
    assert weights is None
    return out, _integration_fallbacks(caught)


@pytest.mark.parametrize("seqlen_q", [1, 5])
def test_decode_step_sees_the_cache_bottom_right(seqlen_q):
    """A KV-cache step (Sq < Sk, no mask): the queries are the newest tokens, as with FlashAttention."""
    query, key, value = _qkv(seqlen_q, SEQLEN)
    out, fallbacks = _call(_module(), query, key, value, None)
    assert not fallbacks and out.shape == (BATCH, seqlen_q, HEADS, HEAD_DIM) and out.is_contiguous()
    torch.testing.assert_close(out, _sdpa(_module(), query, key, value, _bottom_right(seqlen_q, SEQLEN)), **FP32_TOL)


@pytest.mark.parametrize("seqlen_q", [1, SEQLEN])
def test_sliding_window_keeps_window_keys_including_the_query(seqlen_q):
    """transformers' sliding_window = w lets a query see itself and the w - 1 keys before it:
    flash_attn's window_size (w - 1, w - 1), and only once the keys outnumber the window."""
    assert _hf_options.window_size(WINDOW, SEQLEN) == (WINDOW - 1, WINDOW - 1)
    assert _hf_options.window_size(WINDOW, WINDOW) == _hf_options.NO_WINDOW
    query, key, value = _qkv(seqlen_q, SEQLEN)
    out, _ = _call(_module(), query, key, value, None, sliding_window=WINDOW)
    want = _sdpa(_module(), query, key, value, _bottom_right(seqlen_q, SEQLEN, WINDOW))
    torch.testing.assert_close(out, want, **FP32_TOL)


@pytest.mark.parametrize("additive", [False, True])
def test_4d_padding_mask_runs_unpadded(additive):
    pad = LEFT_PADDING
    mask = _bottom_right(SEQLEN, SEQLEN, WINDOW, pad)
    if additive:
        mask = torch.where(mask, 0.0, torch.finfo(torch.float32).min)
    query, key, value = _qkv(SEQLEN, SEQLEN)
    out, fallbacks = _call(_module(), query, key, value, mask, sliding_window=WINDOW)
    assert not fallbacks
    want = _sdpa(_module(), query, key, value, mask)
    for row, p in enumerate(pad):
        torch.testing.assert_close(out[row, p:], want[row, p:], **FP32_TOL)
        assert not out[row, :p].any()     # padding rows come back as zeros


def test_bidirectional_4d_padding_mask_runs_unpadded():
    """An encoder's padding mask (is_causal False): every query row, padding included, sees the tokens."""
    module = _module()
    module.is_causal = False
    pad = LEFT_PADDING
    mask = torch.stack([torch.arange(SEQLEN) >= p for p in pad])[:, None, None, :].expand(-1, 1, SEQLEN, -1)
    query, key, value = _qkv(SEQLEN, SEQLEN)
    out, fallbacks = _call(module, query, key, value, mask)
    assert not fallbacks
    torch.testing.assert_close(out, _sdpa(module, query, key, value, mask), **FP32_TOL)


@pytest.mark.parametrize("kind", ["hole", "bias"])
def test_4d_mask_that_is_no_padding_goes_to_sdpa(kind):
    mask = _bottom_right(SEQLEN, SEQLEN)
    if kind == "hole":
        mask[:, :, :, SEQLEN // 2] = False     # a key no query may see, with tokens on both sides
    else:
        mask = torch.where(mask, 0.0, torch.finfo(torch.float32).min)
        mask[..., 0] += 1.0                     # a score bias: not 0 / masked
    _hf_fallback.reset_warnings()
    query, key, value = _qkv(SEQLEN, SEQLEN)
    out, fallbacks = _call(_module(), query, key, value, mask)
    assert len(fallbacks) == 1 and "attention_mask" in fallbacks[0] and "sdpa_attention_forward" in fallbacks[0]
    assert ("bias" in fallbacks[0]) == (kind == "bias")
    torch.testing.assert_close(out, _sdpa(_module(), query, key, value, mask), **FP32_TOL)


def test_dropout_in_training_goes_to_sdpa():
    _hf_fallback.reset_warnings()
    query, key, value = _qkv(SEQLEN, SEQLEN)
    module = _module(training=True)
    torch.manual_seed(SEED)
    out, fallbacks = _call(module, query, key, value, None, dropout=DROPOUT)
    assert len(fallbacks) == 1 and "dropout" in fallbacks[0]
    torch.manual_seed(SEED)
    torch.testing.assert_close(out, _sdpa(module, query, key, value, None, dropout=DROPOUT), **FP32_TOL)


def test_torch_path_with_softcap_and_sinks_matches_fa3lite():
    """The fallback's eager math (softcap, sinks, a mask) computes what fa3lite computes."""
    softcap, pad = SOFTCAP, LEFT_PADDING
    sink = torch.linspace(-1.0, 1.0, HEADS)
    query, key, value = _qkv(SEQLEN, SEQLEN)
    mask = _bottom_right(SEQLEN, SEQLEN, WINDOW, pad)
    opts = _hf_options.options(_module(), query, SEQLEN, scaling=None, dropout=0.0, sliding_window=WINDOW,
                               softcap=softcap, is_causal=None, s_aux=sink, deterministic=None)
    torch_out = _hf_fallback.attention(_module(), query, key, value, mask, True, opts, ["test: forced"], {})
    ours, fallbacks = _call(_module(), query, key, value, mask, sliding_window=WINDOW, softcap=softcap, s_aux=sink)
    assert not fallbacks
    for row, p in enumerate(pad):
        torch.testing.assert_close(ours[row, p:], torch_out[row, p:], **FP32_TOL)


def test_padding_free_keywords_run_each_sequence_alone():
    lengths = [WINDOW + 3, 1, SEQLEN - WINDOW - 4]     # past the window, a single token, the rest
    query, key, value = _qkv(SEQLEN, SEQLEN, batch=1)
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()])
    out, fallbacks = _call(_module(), query, key, value, None, cu_seq_lens_q=cu, cu_seq_lens_k=cu,
                           max_length_q=torch.tensor(max(lengths)), max_length_k=max(lengths),
                           sliding_window=WINDOW)
    assert not fallbacks
    for start, n in zip(cu.tolist(), lengths):
        part = (t[:, :, start:start + n] for t in (query, key, value))
        alone, _ = _call(_module(), *part, None, sliding_window=WINDOW)
        torch.testing.assert_close(out[:, start:start + n], alone, **FP32_TOL)


def test_two_dimensional_mask_drops_empty_static_cache_slots():
    """A 2-D key mask shorter than the keys: the slots past it are a static cache's empty tail."""
    filled = SEQLEN - WINDOW
    query, key, value = _qkv(1, SEQLEN)
    key[:, :, filled:] = float("nan")           # never read
    out, _ = _call(_module(), query, key, value, torch.ones(BATCH, filled, dtype=torch.bool))
    want = _sdpa(_module(), query, key[:, :, :filled], value[:, :, :filled], None)
    torch.testing.assert_close(out, want, **FP32_TOL)


class _HalfPrecisionAttention(torch.nn.Module):
    """An attention module whose projection is bfloat16, as in a half-precision model."""

    is_causal = True

    def __init__(self):
        super().__init__()
        self.q_proj = torch.nn.Linear(HEAD_DIM, HEAD_DIM, dtype=torch.bfloat16)


@pytest.mark.parametrize("autocast", [False, True])
def test_float32_inputs_of_a_half_precision_model_are_cast(autocast):
    """As for FlashAttention: float32 queries (rotary tables under autocast, PEFT's float32 norms) run
    in the model's compute dtype -- autocast's, else its Linear layers'."""
    module = _HalfPrecisionAttention()
    if autocast:
        module.q_proj.float()
    query, key, value = _qkv(SEQLEN, SEQLEN)
    context = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with context:
        out, _ = _call(module, query, key, value, None)
    assert out.dtype == torch.bfloat16
    want, _ = _call(module, *(t.to(torch.bfloat16) for t in (query, key, value)), None)
    torch.testing.assert_close(out, want, atol=0, rtol=0)
    float_module = _HalfPrecisionAttention().float()
    assert _call(float_module, query, key, value, None)[0].dtype == torch.float32


def _stub_kernels(monkeypatch):
    """fa3lite's entry points replaced by zeros of the right shape (no host syncs of their own)."""
    def dense(q, k, v, **_):
        return q.new_zeros(*q.shape[:3], v.shape[3])

    def varlen(q, k, v, *_, **__):
        return q.new_zeros(*q.shape[:2], v.shape[2])

    monkeypatch.setattr(fa3lite.api, "flash_attn_func", dense)
    monkeypatch.setattr(fa3lite.api, "flash_attn_varlen_func", varlen)


def _count_host_reads(monkeypatch) -> list[str]:
    """Every way a tensor's value reaches the host (.tolist(), .item(), bool(), int(), float()), logged."""
    reads = []
    for name in ("tolist", "item", "__bool__", "__int__", "__float__"):
        original = getattr(torch.Tensor, name)

        def logged(self, *args, _name=name, _original=original, **kwargs):
            reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, logged)
    return reads


def test_each_call_reads_the_device_at_most_once(monkeypatch):
    _stub_kernels(monkeypatch)
    query, key, value = _qkv(SEQLEN, SEQLEN)
    key_mask = torch.stack([torch.arange(SEQLEN) >= p for p in LEFT_PADDING])
    lengths = [WINDOW, SEQLEN - WINDOW]
    one_row = [t[:1] for t in (query, key, value)]
    cases = {
        "no mask": (0, (query, key, value, None), {}),
        "2-D key mask": (1, (query, key, value, key_mask), {}),
        "4-D mask": (1, (query, key, value, _bottom_right(SEQLEN, SEQLEN, WINDOW, LEFT_PADDING)), {}),
        "packed position_ids": (1, (*one_row, None), dict(position_ids=torch.cat([torch.arange(n) for n in lengths]))),
        "cu_seq_lens, int lengths": (0, (*one_row, None), dict(
            cu_seq_lens_q=torch.tensor([0, *lengths]).cumsum(0), cu_seq_lens_k=torch.tensor([0, *lengths]).cumsum(0),
            max_length_q=max(lengths), max_length_k=max(lengths))),
    }
    reads = _count_host_reads(monkeypatch)
    for name, (most, args, kwargs) in cases.items():
        reads.clear()
        fa3lite_hf.attention_forward(_module(), *args, **kwargs)
        assert len(reads) == most, f"{name}: {reads}"


def _query_span(q_length, q_offset):
    """The queries as this transformers' mask interface names them: q_length / q_offset (5.x) or
    cache_position (older)."""
    from transformers.masking_utils import sdpa_mask

    if "q_length" in inspect.signature(sdpa_mask).parameters:
        return dict(q_length=q_length, q_offset=q_offset)
    return dict(cache_position=torch.arange(q_offset, q_offset + q_length))


def test_mask_function_forms():
    common = dict(batch_size=BATCH, kv_length=SEQLEN, kv_offset=0, **_query_span(SEQLEN, 0))
    padding = torch.ones(BATCH, SEQLEN, dtype=torch.bool)
    assert _hf_masks.fa3lite_mask(**common, attention_mask=padding, allow_is_causal_skip=True) is None
    padding[1, :4] = False
    two_d = _hf_masks.fa3lite_mask(**common, attention_mask=padding, allow_is_causal_skip=True)
    assert torch.equal(two_d, padding)
    # a static cache of 2 * SEQLEN slots, SEQLEN of them filled: only those are keys
    static = dict(common, kv_length=2 * SEQLEN)
    assert torch.equal(_hf_masks.fa3lite_mask(**static, attention_mask=None, allow_is_causal_skip=True),
                       torch.ones(BATCH, SEQLEN, dtype=torch.bool))
    # not a plain causal pattern (overlays, packing, bidirectional): transformers' own 4-D SDPA mask
    four_d = _hf_masks.fa3lite_mask(**common, attention_mask=padding, allow_is_causal_skip=False)
    assert four_d.shape == (BATCH, 1, SEQLEN, SEQLEN) and four_d.dtype == torch.bool


def test_register_names_fa3lite_in_both_interfaces():
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    assert AttentionInterface()["fa3lite"] is fa3lite_hf.attention_forward
    assert AttentionMaskInterface()["fa3lite"] is _hf_masks.fa3lite_mask


@pytest.mark.parametrize("keyword, value", [("sliding_window", 0), ("softcap", -1.0), ("s_aux", torch.zeros(3)),
                                            ("scaling", float("nan")), ("dropout", 2.0)])
def test_invalid_arguments_name_the_argument(keyword, value):
    query, key, value_ = _qkv(SEQLEN, SEQLEN)
    with pytest.raises(ValueError, match=keyword):
        fa3lite_hf.attention_forward(_module(), query, key, value_, None, **{keyword: value})


def test_mask_of_other_rank_names_attention_mask():
    query, key, value = _qkv(SEQLEN, SEQLEN)
    with pytest.raises(ValueError, match="attention_mask"):
        fa3lite_hf.attention_forward(_module(), query, key, value, torch.ones(BATCH, 1, SEQLEN, dtype=torch.bool))
