"""Input validation for the public API: every problem collected into one message.

Two kinds of findings, kept apart on purpose:

* problems (``attention_problems``, ``flag_problems``, ``backend_problems``): inputs that are wrong
  for attention itself (not tensors, mismatched dtypes/devices/shapes, ...). They raise ``InputError``
  whatever the backend.
* kernel reasons (``kernel_reasons``): limits of the Hopper kernels only (device, dtype, head dim,
  strides, alignment). With ``backend="auto"`` they select the torch fallback (``FallbackWarning``,
  once per kind of reason); with ``backend="fa3lite"`` they raise ``InputError``.

Every message names the argument, what was expected and what came.
Tensor layout (flash_attn): q (B, Sq, Hq, D), k/v (B, Sk, Hk, D).
"""
from __future__ import annotations

import math
import os
import sys
import warnings

import torch

BACKENDS = ("auto", "fa3lite", "torch")

# dtypes the API accepts at all (the torch fallback computes in fp32, or fp64 for fp64 inputs).
API_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
KERNEL_DTYPES = (torch.float16, torch.bfloat16)
KERNEL_HEAD_DIMS = (64, 96, 128, 192, 256)
KERNEL_HEAD_DIM_PAIRS = tuple((d, d) for d in KERNEL_HEAD_DIMS) + ((192, 128),)   # (q/k head dim, v's)
KERNEL_CAPABILITY = (9, 0)
# TMA descriptors: 16-byte aligned global address, strides positive multiples of 16 bytes < 2^40.
TMA_ALIGN_BYTES = 16
TMA_MAX_STRIDE_BYTES = 1 << 40
# The kernels take softmax_scale * log2(e) as a float32: larger magnitudes cannot be represented.
LOG2E = 1.4426950408889634
_F32_MAX = torch.finfo(torch.float32).max
MAX_SCALE = _F32_MAX / LOG2E

_DIM_NAMES = ("batch", "seqlen", "nheads", "head dim")


class InputError(ValueError, TypeError):
    """Invalid arguments to an fa3lite function; the message lists every problem found.

    Subclasses both ValueError and TypeError, so existing ``except ValueError`` / ``except TypeError``
    handlers around attention calls keep working.
    """


class FallbackWarning(UserWarning):
    """The Hopper kernels were not used for a call; the message says why and what ran instead."""


def raise_if_any(problems: list[str], where: str) -> None:
    """Raise one InputError listing ``problems`` (one per line) if there are any."""
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise InputError(f"{where}: {len(problems)} problem(s):\n{lines}")


def type_name(x) -> str:
    return type(x).__name__


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def backend_problems(backend) -> list[str]:
    if isinstance(backend, str) and backend in BACKENDS:
        return []
    expected = ", ".join(repr(b) for b in BACKENDS)
    return [f"backend: expected one of {expected}, got {backend!r}"]


def flag_problems(**flags) -> list[str]:
    """Problems with boolean keyword arguments (``name=value`` pairs)."""
    return [f"{name}: expected a bool, got {value!r} ({type_name(value)})"
            for name, value in flags.items() if not isinstance(value, bool)]


def scale_problems(name: str, scale) -> list[str]:
    """``scale`` must be None or a finite real number of magnitude at most MAX_SCALE (bools and
    tensors are refused)."""
    if scale is None:
        return []
    if isinstance(scale, bool) or not isinstance(scale, (int, float, torch.SymInt, torch.SymFloat)):
        return [f"{name}: expected None or a finite real number, got {scale!r} ({type_name(scale)})"]
    if isinstance(scale, (int, float)) and not math.isfinite(scale):
        return [f"{name}: expected None or a finite real number, got {scale!r}"]
    if isinstance(scale, (int, float)) and abs(scale) > MAX_SCALE:
        return [f"{name}: expected a magnitude of at most {MAX_SCALE:.4g} (softmax_scale * log2(e) must "
                f"fit a float32), got {scale!r}"]
    return []


def attention_problems(q, k, v, names: tuple[str, str, str] = ("q", "k", "v"),
                       layout: str = "bshd") -> list[str]:
    """Problems that make (q, k, v) invalid for attention whatever the backend.

    layout "bshd" (flash_attn): q (B, Sq, Hq, D), k and v (B, Sk, Hk, D); layout "bhsd" (torch SDPA):
    q (B, Hq, Sq, D), k and v (B, Hk, Sk, D). v's last dim Dv may differ from D (out takes it).
    Hq must be a multiple of Hk; one dtype among
    float16/bfloat16/float32/float64 and one device.
    """
    qn, kn, vn = names
    h = 2 if layout == "bshd" else 1
    dims = "(batch, seqlen, nheads, head dim)" if layout == "bshd" else "(batch, nheads, seqlen, head dim)"
    problems = []
    tensors = {}  # name -> tensor, for the arguments that are tensors
    for name, t in zip(names, (q, k, v)):
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name}: expected a torch.Tensor, got {type_name(t)}")
            continue
        tensors[name] = t
        if t.dim() != 4:
            problems.append(f"{name}.dim(): expected 4 dimensions {dims}, got {t.dim()} with shape {_shape(t)}")
        # Only the first tensor's dtype is judged here; the others must equal it (checked below).
        if len(tensors) == 1 and t.dtype not in API_DTYPES:
            expected = ", ".join(str(d) for d in API_DTYPES)
            problems.append(f"{name}.dtype: expected one of {expected}, got {t.dtype}")
    if not tensors:
        return problems
    # dtype and device are compared with the first tensor argument (q unless q is not a tensor).
    first_name, first = next(iter(tensors.items()))
    for name, t in tensors.items():
        if t is first:
            continue
        if t.dtype != first.dtype:
            problems.append(f"{name}.dtype: expected the same dtype as {first_name} ({first.dtype}), "
                            f"got {t.dtype}")
        if t.device != first.device:
            problems.append(f"{name}.device: expected the same device as {first_name} ({first.device}), "
                            f"got {t.device}")
    four_d = {name: t for name, t in tensors.items() if t.dim() == 4}
    if qn in four_d and q.shape[3] == 0:
        problems.append(f"{qn}.shape[3] (head dim): expected at least 1, got 0")
    if qn in four_d and kn in four_d:
        if k.shape[0] != q.shape[0]:
            problems.append(f"{kn}.shape[0] (batch): expected {qn}'s batch size {q.shape[0]}, "
                            f"got {k.shape[0]}")
        if k.shape[3] != q.shape[3]:
            problems.append(f"{kn}.shape[3] (head dim): expected {qn}'s head dim {q.shape[3]}, "
                            f"got {k.shape[3]}")
        hq, hk = q.shape[h], k.shape[h]
        if hk == 0 and hq != 0:
            problems.append(f"{kn}.shape[{h}] (nheads_k): expected at least 1 when {qn} has {hq} heads, "
                            f"got 0")
        elif hk != 0 and hq % hk != 0:
            problems.append(f"{qn}.shape[{h}] (nheads_q): expected a multiple of {kn}.shape[{h}] "
                            f"(nheads_k = {hk}), got {hq}")
    if kn in four_d and vn in four_d and _shape(v)[:3] != _shape(k)[:3]:
        # (v's head dim may differ from q's and k's: out takes v's)
        problems.append(f"{vn}.shape: expected the same shape as {kn} {_shape(k)}, got {_shape(v)}")
    return problems


def sdpa_problems(query, key, value, dropout_p, is_causal, scale, enable_gqa) -> list[str]:
    """Arguments of scaled_dot_product_attention that torch itself would reject (or may treat in ways
    fa3lite does not reproduce); such calls go to torch unchanged. Expects 4-D (B, H, S, D) tensors."""
    problems = flag_problems(is_causal=is_causal, enable_gqa=enable_gqa) + scale_problems("scale", scale)
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)):
        problems.append(f"dropout_p: expected a float, got {dropout_p!r} ({type_name(dropout_p)})")
    problems += attention_problems(query, key, value, ("query", "key", "value"), layout="bhsd")
    if not problems and enable_gqa is False and key.shape[1] != query.shape[1]:
        problems.append(f"key.shape[1] (nheads): expected query's {query.shape[1]} heads "
                        f"(or enable_gqa=True), got {key.shape[1]}")
    return problems


def softcap_problems(softcap) -> list[str]:
    """softcap: a finite real number >= 0 (0 = off). A symbolic value (torch.compile) is checked where
    it becomes concrete (the op's own checks)."""
    if isinstance(softcap, bool) or not isinstance(softcap, (int, float, torch.SymInt, torch.SymFloat)):
        return [f"softcap: expected a finite real number >= 0 (0 = off), got {softcap!r} ({type_name(softcap)})"]
    if torch.compiler.is_compiling():
        return []      # dynamo traces float arguments symbolically; fa3lite::fwd checks the value
    if not (math.isfinite(softcap) and softcap >= 0):
        return [f"softcap: expected a finite real number >= 0 (0 = off), got {softcap!r}"]
    return []


def window_problems(window_size) -> list[str]:
    """window_size: a (left, right) pair of ints, each -1 (unbounded) or >= 0."""
    if (not isinstance(window_size, (tuple, list)) or len(window_size) != 2
            or not all(isinstance(w, int) and not isinstance(w, bool) for w in window_size)):
        return [f"window_size: expected a (left, right) pair of ints, got {window_size!r}"]
    if any(w < -1 for w in window_size):
        return [f"window_size: expected each of (left, right) to be -1 (unbounded) or >= 0, got {tuple(window_size)}"]
    return []


def sink_problems(sink, q, name: str = "learnable_sink") -> list[str]:
    """sink: None or a (Hq,) floating-point tensor on q's device (one logit per query head)."""
    if sink is None:
        return []
    if not isinstance(sink, torch.Tensor):
        return [f"{name}: expected None or a torch.Tensor of shape (nheads_q,), got {type_name(sink)}"]
    problems = []
    heads = q.shape[2] if isinstance(q, torch.Tensor) and q.dim() == 4 else None
    if sink.dim() != 1 or (heads is not None and sink.shape[0] != heads):
        want = f"({heads},) (q's nheads)" if heads is not None else "(nheads_q,)"
        problems.append(f"{name}.shape: expected {want}, got {_shape(sink)}")
    if not sink.dtype.is_floating_point:
        problems.append(f"{name}.dtype: expected a floating-point dtype, got {sink.dtype}")
    if isinstance(q, torch.Tensor) and sink.device != q.device:
        problems.append(f"{name}.device: expected q's device ({q.device}), got {sink.device}")
    return problems


def varlen_problems(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q=None,
                    seqused_k=None) -> list[str]:
    """Problems with the tensors of a varlen call: q (total_q, Hq, D), k and v (total_k, Hk, D) as in
    attention_problems (one dtype and device, Hq a multiple of Hk, k and v alike); cu_seqlens_q/k int32
    1-D (B + 1,) on q's device; seqused_q/k None or int32 (B,) there; max_seqlen_q/k ints >= 0.
    (Values inside the offset tensors are not read: that would wait for the GPU.)"""
    problems = []
    qkv = []
    for name, t in (("q", q), ("k", k), ("v", v)):
        if isinstance(t, torch.Tensor) and t.dim() != 3:
            problems.append(f"{name}.dim(): expected 3 dimensions (total tokens, nheads, head dim), got {t.dim()} "
                            f"with shape {_shape(t)}")
            qkv.append(None)
        else:
            qkv.append(t.unsqueeze(0) if isinstance(t, torch.Tensor) else t)
    if not problems:
        problems += [p.replace("(batch, seqlen, nheads, head dim)", "(total tokens, nheads, head dim)")
                     for p in attention_problems(*qkv) if not p.startswith(("k.shape[0]",))]
    device = q.device if isinstance(q, torch.Tensor) else None
    batch = None
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name}: expected an int32 torch.Tensor of shape (batch + 1,), got {type_name(t)}")
            continue
        if t.dtype != torch.int32 or t.dim() != 1 or t.shape[0] < 1:
            problems.append(f"{name}: expected an int32 tensor of shape (batch + 1,), got {t.dtype} {_shape(t)}")
        elif batch is None:
            batch = t.shape[0] - 1
        elif t.shape[0] - 1 != batch:
            problems.append(f"{name}.shape: expected ({batch + 1},) like cu_seqlens_q, got {_shape(t)}")
        if device is not None and t.device != device:
            problems.append(f"{name}.device: expected q's device ({device}), got {t.device}")
    for name, t in (("seqused_q", seqused_q), ("seqused_k", seqused_k)):
        if t is None:
            continue
        if not isinstance(t, torch.Tensor) or t.dtype != torch.int32 or t.dim() != 1 or (
                batch is not None and t.shape[0] != batch):
            got = f"{t.dtype} {_shape(t)}" if isinstance(t, torch.Tensor) else type_name(t)
            problems.append(f"{name}: expected None or an int32 tensor of shape (batch,) = ({batch},), got {got}")
        elif device is not None and t.device != device:
            problems.append(f"{name}.device: expected q's device ({device}), got {t.device}")
    for name, n in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if isinstance(n, bool) or not isinstance(n, (int, torch.SymInt)) or (isinstance(n, int) and n < 0):
            problems.append(f"{name}: expected an int >= 0 (the longest sequence), got {n!r}")
    return problems


def varlen_op_problems(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k,
                       softcap, sink, backend) -> list[str]:
    """Every problem with the arguments of the custom ops fa3lite::varlen_fwd / varlen_bwd (the tensors
    of flash_attn_varlen_func, softcap, sink, backend)."""
    problems = varlen_problems(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k)
    if isinstance(q, torch.Tensor) and q.dim() == 3:
        problems += sink_problems(sink, q.unsqueeze(0), "sink")
    return problems + softcap_problems(softcap) + backend_problems(backend)


def fwd_op_problems(q, k, v, softmax_scale, backend, softcap=0.0, sink=None) -> list[str]:
    """Every problem with the arguments of the custom op fa3lite::fwd (flash_attn layout), which may be
    called directly: the same rules as flash_attn_func. (The dispatcher has already checked each
    argument's type against the op's schema.)"""
    problems = attention_problems(q, k, v) + scale_problems("softmax_scale", softmax_scale)
    problems += softcap_problems(softcap) + sink_problems(sink, q, "sink")
    return problems + backend_problems(backend)


def bwd_op_problems(dout, q, k, v, out, lse, softmax_scale, backend, softcap=0.0, sink=None) -> list[str]:
    """Every problem with the arguments of the custom op fa3lite::bwd: fwd's rules for (q, k, v), plus
    dout and out shaped (B, Sq, Hq, Dv) (v's head dim) in q's dtype, lse (B, Hq, Sq) float32, all on q's
    device."""
    problems = fwd_op_problems(q, k, v, softmax_scale, backend, softcap, sink)
    if not isinstance(q, torch.Tensor) or q.dim() != 4:
        for name, t in (("dout", dout), ("out", out), ("lse", lse)):
            if not isinstance(t, torch.Tensor):
                problems.append(f"{name}: expected a torch.Tensor, got {type_name(t)}")
        return problems
    b, sq, hq, _ = q.shape
    dv = v.shape[3] if isinstance(v, torch.Tensor) and v.dim() == 4 else q.shape[3]
    o_shape = (b, sq, hq, dv)
    for name, t, shape, dtype in (("dout", dout, o_shape, q.dtype), ("out", out, o_shape, q.dtype),
                                  ("lse", lse, (b, hq, sq), torch.float32)):
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name}: expected a torch.Tensor, got {type_name(t)}")
            continue
        if _shape(t) != shape:
            source = f"q's shape {_shape(q)}" + (f" and v's head dim {dv}" if dv != q.shape[3] else "")
            problems.append(f"{name}.shape: expected {shape} (from {source}), got {_shape(t)}")
        if t.dtype != dtype:
            problems.append(f"{name}.dtype: expected {dtype}, got {t.dtype}")
        if t.device != q.device:
            problems.append(f"{name}.device: expected q's device ({q.device}), got {t.device}")
    return problems


def sdpa_unsupported(query, key, value, attn_mask, dropout_p, enable_gqa) -> list[str]:
    """Valid scaled_dot_product_attention arguments that only torch's implementation serves."""
    reasons = []
    if attn_mask is not None:
        reasons.append(f"attn_mask: expected None for fa3lite (only is_causal masks), got "
                       f"{type_name(attn_mask)}")
    if isinstance(dropout_p, (int, float)) and not isinstance(dropout_p, bool) and dropout_p != 0:
        reasons.append(f"dropout_p: expected 0.0 for fa3lite, got {dropout_p}")
    ranks = {t.dim() for t in (query, key, value) if isinstance(t, torch.Tensor)}
    if len(ranks) > 1 or not ranks <= {3, 4}:
        reasons.append(f"query/key/value.dim(): expected all 3 or all 4 dimensions for fa3lite, got "
                       f"{[t.dim() for t in (query, key, value) if isinstance(t, torch.Tensor)]}")
    elif ranks == {3} and enable_gqa:
        reasons.append("enable_gqa: expected False for 3-D inputs (no head dimension) for fa3lite, got True")
    dtypes = {t.dtype for t in (query, key, value) if isinstance(t, torch.Tensor)}
    if dtypes and not dtypes <= set(KERNEL_DTYPES):
        names = ", ".join(sorted(str(d) for d in dtypes))
        reasons.append(f"query/key/value.dtype: expected torch.float16 or torch.bfloat16 for fa3lite "
                       f"(other dtypes go to torch), got {names}")
    shapes = [t.shape for t in (query, value) if isinstance(t, torch.Tensor)]
    if len(shapes) == 2 and len(shapes[0]) == len(shapes[1]) and shapes[0][-1] != shapes[1][-1]:
        reasons.append(f"value.shape[-1]: expected query's head dim {shapes[0][-1]} for fa3lite, "
                       f"got {shapes[1][-1]}")
    return reasons


def _capability(device: torch.device) -> tuple[int, int] | None:
    """Compute capability of a CUDA device (None when CUDA is unusable); cached per device index."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    cap = _CAPABILITIES.get(index)
    if cap is None:
        try:
            cap = torch.cuda.get_device_capability(index)
        except (RuntimeError, AssertionError):  # torch built without CUDA, or no driver
            return None
        _CAPABILITIES[index] = cap
    return cap


_CAPABILITIES: dict[int, tuple[int, int]] = {}


def tma_ready(t: torch.Tensor) -> torch.Tensor:
    """``t`` if its layout suits the kernels' tensor maps (layout_reasons), else a fresh contiguous copy
    (a fresh one: ``contiguous()`` would return a contiguous but misaligned tensor unchanged)."""
    return t.clone(memory_format=torch.contiguous_format) if layout_reasons("t", t) else t


def layout_reasons(name: str, t: torch.Tensor) -> list[str]:
    """Stride and alignment limits of the TMA descriptors for one (B, S, H, D) tensor."""
    reasons = []
    itemsize = t.element_size()
    strides = t.stride()
    if strides[3] != 1:
        reasons.append(f"{name}.stride(3) (head dim): expected 1 (last dim contiguous) for the fa3lite "
                       f"kernels, got {strides[3]}")
    if t.data_ptr() % TMA_ALIGN_BYTES:
        reasons.append(f"{name}.data_ptr(): expected a multiple of {TMA_ALIGN_BYTES} bytes for the fa3lite "
                       f"kernels (TMA), got an address {t.data_ptr() % TMA_ALIGN_BYTES} bytes past one "
                       f"(storage_offset {t.storage_offset()})")
    for dim in range(3):
        if t.shape[dim] == 1:
            continue  # a size-1 dim's stride never forms an address; the tensor map uses a nominal one
        nbytes = strides[dim] * itemsize
        if nbytes <= 0 or nbytes % TMA_ALIGN_BYTES or nbytes >= TMA_MAX_STRIDE_BYTES:
            reasons.append(f"{name}.stride({dim}) ({_DIM_NAMES[dim]}): expected a positive multiple of "
                           f"{TMA_ALIGN_BYTES} bytes below 2^40 for the fa3lite kernels (TMA), got "
                           f"{strides[dim]} elements = {nbytes} bytes")
    return reasons


_PACKED_DIMS = (("shape[3] (head dim)", "shape[2] (head dim)"), ("stride(3) (head dim)", "stride(2) (head dim)"),
                ("stride(2) (nheads)", "stride(1) (nheads)"), ("stride(1) (seqlen)", "stride(0) (total tokens)"))


def packed_reason(reason: str) -> str:
    """A kernel reason about a (1, total, H, D) view, reworded for the packed (total, H, D) tensor."""
    for old, new in _PACKED_DIMS:
        reason = reason.replace(old, new)
    return reason


def kernel_reasons(q, k, v, softmax_scale: float | None = None, softcap: float = 0.0) -> list[str]:
    """Every reason the Hopper kernels cannot take (q, k, v); empty when they can.

    Assumes ``attention_problems`` found nothing (three 4-D tensors of one dtype and device).
    Runs on every call, so it only reads metadata: device, dtype, shape, strides, data_ptr.
    ``softmax_scale`` (optional) adds the kernels' limit softmax_scale > 0; ``softcap`` (> 0) that the
    kernels' float32 factors softmax_scale / softcap and softcap * log2(e) are finite.
    """
    reasons = []
    device = q.device
    if device.type != "cuda":
        reasons.append(f"q.device: expected a CUDA device with compute capability "
                       f"{KERNEL_CAPABILITY[0]}.{KERNEL_CAPABILITY[1]} (Hopper) for the fa3lite kernels, "
                       f"got {device}")
    else:
        cap = _capability(device)
        if cap != KERNEL_CAPABILITY:
            got = "no usable CUDA driver" if cap is None else f"capability {cap[0]}.{cap[1]}"
            reasons.append(f"q.device: expected compute capability {KERNEL_CAPABILITY[0]}."
                           f"{KERNEL_CAPABILITY[1]} (Hopper) for the fa3lite kernels, got {got} on {device}")
    for i, (name, t) in enumerate((("q", q), ("k", k), ("v", v))):
        # k and v repeat q's dtype/head-dim reason only when they differ from q (unvalidated callers).
        if t.dtype not in KERNEL_DTYPES and (i == 0 or t.dtype != q.dtype):
            reasons.append(f"{name}.dtype: expected torch.float16 or torch.bfloat16 for the fa3lite "
                           f"kernels, got {t.dtype}")
        if t.shape[3] not in KERNEL_HEAD_DIMS and (i == 0 or t.shape[3] != q.shape[3]):
            dims = ", ".join(str(d) for d in KERNEL_HEAD_DIMS)
            reasons.append(f"{name}.shape[3] (head dim): expected one of {dims} for the fa3lite kernels, "
                           f"got {t.shape[3]}")
        reasons.extend(layout_reasons(name, t))
    pair = (q.shape[3], v.shape[3])
    if pair not in KERNEL_HEAD_DIM_PAIRS and pair[0] in KERNEL_HEAD_DIMS and pair[1] in KERNEL_HEAD_DIMS:
        unequal = ", ".join(f"{dv} with q's {d}" for d, dv in KERNEL_HEAD_DIM_PAIRS if d != dv)
        reasons.append(f"v.shape[3] (head dim): expected q's head dim {pair[0]} (or {unequal}) for the fa3lite "
                       f"kernels, got {pair[1]}")
    if softmax_scale is not None and not softmax_scale > 0:
        reasons.append(f"softmax_scale: expected > 0 for the fa3lite kernels, got {softmax_scale}")
    if softcap > 0 and softmax_scale is not None and not (softmax_scale / softcap <= _F32_MAX
                                                           and softcap <= MAX_SCALE):
        reasons.append(f"softcap: expected softmax_scale / softcap and softcap * log2(e) within float32 for "
                       f"the fa3lite kernels, got softcap {softcap} with softmax_scale {softmax_scale}")
    return reasons


# Reason sets already warned about, keyed by what each reason is about (reason_kind), not by the values
# in its text, so calls that differ only in offsets, strides or shapes warn once. Bounded: past
# _MAX_WARNED keys no new warning is shown (the kinds are a small fixed set; the bound is a guard).
_warned: set[tuple[str, frozenset[str]]] = set()
_MAX_WARNED = 256
_INTERNAL_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch, sys.modules[__package__]))


def reason_kind(reason: str) -> str:
    """What a reason is about: its text before the first ': ' (the argument and property, e.g.
    'q.stride(0) (batch)'), without the values that follow."""
    return reason.split(": ", 1)[0]


def _caller_stacklevel() -> int:
    """stacklevel for a warning raised in warn_fallback_once that points at the first frame outside
    fa3lite and torch (the user's call), however deep the dispatcher nested the op."""
    level, frame = 2, sys._getframe(2)  # level 1 is warn_fallback_once, 2 its caller
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL_DIRS):
        level, frame = level + 1, frame.f_back
    return level


def warn_fallback_once(reasons: list[str], instead: str) -> None:
    """FallbackWarning naming ``reasons`` and what runs ``instead``, once per process per set of reason
    kinds (see reason_kind); the text shows the first call's values."""
    key = (instead, frozenset(reason_kind(r) for r in reasons))
    if key in _warned or len(_warned) >= _MAX_WARNED:
        return
    _warned.add(key)
    lines = "\n".join(f"  - {r}" for r in reasons)
    warnings.warn(f"fa3lite: the Hopper kernels cannot run this call, using {instead} "
                  f"(this warning is shown once per kind of reason; pass backend='torch' to choose it "
                  f"explicitly, backend='fa3lite' to raise instead):\n{lines}",
                  FallbackWarning, stacklevel=_caller_stacklevel())


def reset_fallback_warnings() -> None:
    """Forget which fallback warnings were shown (for tests)."""
    _warned.clear()
