"""Tokens per second of a Hugging Face transformers model with attn_implementation="fa3lite" beside
"sdpa" (and "flash_attention_2" when flash-attn is installed): a training step (forward + backward
of the LM loss) and greedy generation, on a model built from a config with random weights (no
download), bf16 on the GPU.

    python tools/hf_bench.py [--model llama|mistral|qwen2] [--layers 8] [--hidden 2048] [--heads 16]
                             [--kv-heads 4] [--batch 8] [--seqlen 2048] [--new-tokens 128] [--out FILE]
                             [--device cpu]   (cpu: a smoke run of the tool, float32, torch fallback)

Each implementation is timed in alternation, --rounds times (so clock drift hits all alike); the
median of each is printed and written as JSON. Issue 14 asks for this table in RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

import fa3lite.integrations.transformers as fa3lite_hf

CONFIGS = {"llama": "LlamaConfig", "mistral": "MistralConfig", "qwen2": "Qwen2Config"}
MODELS = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}
VOCAB = 32000
TRAIN_WARMUP = 2     # steps before timing: kernel compiles, allocator growth, autotuning
DTYPES = {"cuda": torch.bfloat16, "cpu": torch.float32}   # cpu: a smoke run of the tool itself (the fallback)


def build(args, attn: str):
    import transformers

    config = getattr(transformers, CONFIGS[args.model])(
        vocab_size=VOCAB, hidden_size=args.hidden, intermediate_size=4 * args.hidden, num_hidden_layers=args.layers,
        num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.seqlen + args.new_tokens, attn_implementation=attn)
    torch.manual_seed(0)
    model = getattr(transformers, MODELS[args.model])(config)
    # no end-of-sequence token: every row generates exactly --new-tokens (random weights would stop
    # some rows early at a random "eos")
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model.to(args.device, DTYPES[args.device])


def train_tokens_per_s(model, args) -> float:
    model.train()
    ids = torch.randint(0, VOCAB, (args.batch, args.seqlen), device=args.device)
    for _ in range(TRAIN_WARMUP):
        model(input_ids=ids, labels=ids).loss.backward()
    _sync(model)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        model(input_ids=ids, labels=ids).loss.backward()
    _sync(model)
    model.zero_grad(set_to_none=True)
    return args.steps * args.batch * args.seqlen / (time.perf_counter() - t0)


@torch.no_grad()
def generate_tokens_per_s(model, args) -> float:
    model.eval()
    prompt = torch.randint(0, VOCAB, (args.batch, args.prompt), device=args.device)
    kwargs = dict(max_new_tokens=args.new_tokens, do_sample=False)
    model.generate(prompt, **kwargs)
    _sync(model)
    t0 = time.perf_counter()
    model.generate(prompt, **kwargs)
    _sync(model)
    return args.batch * args.new_tokens / (time.perf_counter() - t0)


def _sync(model) -> None:
    if model.device.type == "cuda":
        torch.cuda.synchronize()


def available(attn: str) -> str | None:
    """None when the implementation can run here, else why not."""
    if attn == "flash_attention_2":
        try:
            import flash_attn  # noqa: F401
        except ImportError as exc:
            return f"flash-attn not installed ({exc})"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(CONFIGS), default="llama")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=2048, help="training sequence length")
    ap.add_argument("--prompt", type=int, default=512, help="generation prompt length")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--steps", type=int, default=5, help="timed training steps per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="hf_bench.json")
    ap.add_argument("--device", choices=sorted(DTYPES), default="cuda")
    args = ap.parse_args()
    fa3lite_hf.register()
    impls = [a for a in ("fa3lite", "sdpa", "flash_attention_2") if available(a) is None]
    for a in ("flash_attention_2",):
        if a not in impls:
            print(f"{a}: not timed: {available(a)}")
    runs = {a: {"train": [], "generate": []} for a in impls}
    for _ in range(args.rounds):
        for attn in impls:
            model = build(args, attn)
            runs[attn]["train"].append(train_tokens_per_s(model, args))
            runs[attn]["generate"].append(generate_tokens_per_s(model, args))
            del model
            if args.device == "cuda":
                torch.cuda.empty_cache()
    summary = {a: {k: statistics.median(v) for k, v in r.items()} for a, r in runs.items()}
    print(f"{'attn':20} {'train tok/s':>12} {'generate tok/s':>15}")
    for a, s in summary.items():
        print(f"{a:20} {s['train']:12.0f} {s['generate']:15.1f}")
    with open(args.out, "w") as f:
        json.dump({"args": vars(args), "runs": runs, "median": summary,
                   "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu"}, f, indent=1)


if __name__ == "__main__":
    main()
