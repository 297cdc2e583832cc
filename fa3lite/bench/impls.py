"""The attention implementations the benchmark times, each behind one small adapter.

Every adapter takes q, k, v as (B, S, H, d) tensors (flash_attn layout) and returns out of the same
layout, so all of them run on the very same input tensors. SDPA and FlexAttention want (B, H, S, d):
they get transposed views of the same storage, and their output is transposed back (a view).
Causal means bottom-right alignment (key j visible to query i iff j <= i + Sk - Sq); the grid only
has Sq == Sk, where top-left (SDPA's is_causal) is the same mask. For the host-time table those
entries also give their call on (B, H, S, d) tensors (Bound.torch_layout): a caller in torch's layout
has such tensors already, so the table times that call on views made once, not the views the
adapter makes per call (several microseconds at the table's tiny shape).
"""
from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from typing import Callable, ContextManager

import torch

AttnCall = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

BASELINE = "cudnn"
# FlexAttention recompiles for each new static shape; dynamo's default limit (8) would fall back to
# eager (slow, S x S memory) partway through the grid.
_FLEX_RECOMPILE_LIMIT = 256


# Host-time modes (results.HostTime.mode): no grad, inputs requiring grad (forward only), forward+backward.
HOST_MODES = ("fwd", "fwd_grad", "fwd_bwd")


@dataclass(frozen=True)
class Bound:
    """An implementation fixed to one mask/scale: call(q, k, v) -> out, all (B, S, H, d).

    context() is entered around a batch of calls (SDPA's backend selection), outside the timing of
    each call but inside the loop that times them. host_modes: the host-time modes it is timed in.
    torch_layout: for an entry taking torch's (B, H, S, d) layout, the same call on such tensors
    (out (B, H, S, d)), which the host-time table times in place of ``call``; None: ``call`` is the
    implementation's own entry.
    """

    call: AttnCall
    context: Callable[[], ContextManager] = field(default=contextlib.nullcontext)
    host_modes: tuple[str, ...] = HOST_MODES
    torch_layout: AttnCall | None = None


class Impl:
    """Base adapter. name: key in the files; label: column heading; deterministic: whether its
    backward is the deterministic one, None where the adapter does not choose (written to the files
    only when not None); in_default_run: run when --impl names none; host_timed: in the host-time
    table."""

    name = ""
    label = ""
    deterministic: bool | None = None
    in_default_run = True
    host_timed = True

    def probe(self) -> str | None:
        """None when the implementation can be imported here, else the reason it is absent."""
        raise NotImplementedError

    def bind(self, causal: bool, seqlen_q: int, seqlen_k: int, scale: float, device) -> Bound:
        raise NotImplementedError


def _from_torch_layout(native: AttnCall) -> AttnCall:
    """The adapter's call of an entry taking (B, H, S, d): transposed views in, out transposed back."""

    def call(q, k, v):
        return native(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)

    return call


def first_output(result):
    """Libraries return out or (out, lse, ...): keep out."""
    return result[0] if isinstance(result, (tuple, list)) else result


def _import_reason(module: str, attr: str | None = None) -> str | None:
    try:
        mod = importlib.import_module(module)
        if attr is not None and not hasattr(mod, attr):
            return f"{module} has no {attr}"
    except Exception as exc:  # an installed but broken package is just as absent
        return f"cannot import {module}{'.' + attr if attr else ''}: {type(exc).__name__}: {exc}"
    return None


class Fa3lite(Impl):
    """fa3lite.flash_attn_func pinned to its Hopper kernels: a fallback must never be timed as it.
    The default backward (dQ accumulated with atomics)."""

    name, label = "fa3lite", "fa3lite"
    deterministic = False

    def probe(self):
        return _import_reason("fa3lite", "flash_attn_func")

    def bind(self, causal, seqlen_q, seqlen_k, scale, device):
        import fa3lite

        fn = fa3lite.flash_attn_func
        deterministic = self.deterministic

        def call(q, k, v):
            return fn(q, k, v, softmax_scale=scale, causal=causal, deterministic=deterministic, backend="fa3lite")

        return Bound(call)


class Fa3liteDeterministic(Fa3lite):
    """fa3lite with its deterministic backward (no atomics in the dQ accumulation): the same forward,
    so it only runs when asked for (--deterministic) and stays out of the host-time table."""

    name, label = "fa3lite_det", "fa3lite det"
    deterministic = True
    in_default_run = False
    host_timed = False


def fa3lite_host_entries():
    """fa3lite's entries besides flash_attn_func timed for host time: (name, bind) pairs, bind taking
    Impl.bind's arguments."""

    def sdpa(causal, seqlen_q, seqlen_k, scale, device):
        import fa3lite

        fn = fa3lite.scaled_dot_product_attention

        def native(q, k, v):
            return fn(q, k, v, is_causal=causal, scale=scale, backend="fa3lite")

        return Bound(_from_torch_layout(native), torch_layout=native)

    def compiled(causal, seqlen_q, seqlen_k, scale, device):
        import fa3lite

        fn = torch.compile(lambda q, k, v: fa3lite.flash_attn_func(q, k, v, softmax_scale=scale, causal=causal,
                                                                   backend="fa3lite"),
                           fullgraph=True, dynamic=False)
        return Bound(fn, host_modes=("fwd", "fwd_bwd"))

    def graph(causal, seqlen_q, seqlen_k, scale, device):
        """The call captured once per set of input addresses into a CUDA graph; calls replay it."""
        import fa3lite

        def run(q, k, v):
            return fa3lite.flash_attn_func(q, k, v, softmax_scale=scale, causal=causal, backend="fa3lite")

        state = {}

        def call(q, k, v):
            key = (q.data_ptr(), k.data_ptr(), v.data_ptr())
            if state.get("key") != key:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    run(q, k, v)                      # kernels loaded before the capture
                torch.cuda.current_stream().wait_stream(side)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = run(q, k, v)
                state.update(key=key, graph=g, out=out)
            state["graph"].replay()
            return state["out"]

        return Bound(call, host_modes=("fwd",))

    return [("fa3lite_sdpa", sdpa), ("fa3lite_compiled", compiled), ("fa3lite_graph", graph)]


class Sdpa(Impl):
    """torch SDPA restricted to one backend (cuDNN, flash = FA2, memory-efficient)."""

    def __init__(self, name: str, label: str, backend_name: str):
        self.name, self.label, self._backend_name = name, label, backend_name

    def probe(self):
        reason = _import_reason("torch.nn.attention", "sdpa_kernel")
        if reason is None and not hasattr(torch.nn.attention.SDPBackend, self._backend_name):
            reason = f"torch {torch.__version__} has no SDPBackend.{self._backend_name}"
        return reason

    def bind(self, causal, seqlen_q, seqlen_k, scale, device):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, self._backend_name)
        if causal and seqlen_q != seqlen_k:
            raise NotImplementedError("SDPA's is_causal is top-left; bottom-right needs Sq == Sk here")
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def native(q, k, v):
            return sdpa(q, k, v, is_causal=causal, scale=scale)

        return Bound(_from_torch_layout(native), lambda: sdpa_kernel(backend), torch_layout=native)


_flex_compiled = None


def _compiled_flex():
    global _flex_compiled
    if _flex_compiled is None:
        import torch._dynamo.config as dynamo_config
        from torch.nn.attention.flex_attention import flex_attention

        for knob in ("recompile_limit", "cache_size_limit"):
            if hasattr(dynamo_config, knob):
                setattr(dynamo_config, knob, max(getattr(dynamo_config, knob), _FLEX_RECOMPILE_LIMIT))
        # Donated buffers (a memory saving: the backward reuses saved tensors' storage) forbid
        # retain_graph, which the backward-only timing needs to replay one graph per input set.
        import torch._functorch.config as functorch_config

        if hasattr(functorch_config, "donated_buffer"):
            functorch_config.donated_buffer = False
        # Static shapes: what a fixed-shape training run gets, and flex's fastest kernels.
        _flex_compiled = torch.compile(flex_attention, dynamic=False)
    return _flex_compiled


class Flex(Impl):
    """FlexAttention under torch.compile; causal through a block mask (fully masked blocks skipped)."""

    name, label = "flex", "Flex"

    def probe(self):
        return _import_reason("torch.nn.attention.flex_attention", "create_block_mask") or (
            _import_reason("triton")
        )

    def bind(self, causal, seqlen_q, seqlen_k, scale, device):
        from torch.nn.attention.flex_attention import create_block_mask

        flex = _compiled_flex()
        block_mask = None
        if causal:
            offset = seqlen_k - seqlen_q

            def bottom_right(b, h, q_idx, kv_idx):
                return kv_idx <= q_idx + offset

            block_mask = create_block_mask(bottom_right, None, None, seqlen_q, seqlen_k, device=device)

        def native(q, k, v):
            return flex(q, k, v, block_mask=block_mask, scale=scale)

        return Bound(_from_torch_layout(native), torch_layout=native)


class FlashAttnLib(Impl):
    """A flash_attn-style package: module.flash_attn_func(q, k, v, softmax_scale=, causal=)."""

    def __init__(self, name: str, label: str, module: str, package: str):
        self.name, self.label, self._module, self._package = name, label, module, package

    def probe(self):
        reason = _import_reason(self._module, "flash_attn_func")
        return None if reason is None else f"{self._package} not installed ({reason})"

    def bind(self, causal, seqlen_q, seqlen_k, scale, device):
        fn = importlib.import_module(self._module).flash_attn_func

        def call(q, k, v):
            return first_output(fn(q, k, v, softmax_scale=scale, causal=causal))

        return Bound(call)


def all_impls() -> list[Impl]:
    """Every implementation, in table order (fa3lite first, its deterministic backward next to it,
    then the cuDNN baseline)."""
    return [
        Fa3lite(),
        Fa3liteDeterministic(),
        Sdpa(BASELINE, "cuDNN", "CUDNN_ATTENTION"),
        FlashAttnLib("fa4", "FA4", "flash_attn.cute", "flash-attn-4"),
        FlashAttnLib("fa3", "FA3", "flash_attn_interface", "FlashAttention-3 (flash_attn_interface)"),
        Sdpa("fa2", "FA2(SDPA)", "FLASH_ATTENTION"),
        Sdpa("mem_eff", "MemEff", "EFFICIENT_ATTENTION"),
        Flex(),
    ]


IMPL_NAMES = tuple(i.name for i in all_impls())
DEFAULT_IMPL_NAMES = tuple(i.name for i in all_impls() if i.in_default_run)
DETERMINISTIC_IMPL = Fa3liteDeterministic.name
# The implementations running fa3lite's kernels: run last in each cell, checked at an odd length too,
# and a wrong answer of theirs sets the exit status.
FA3LITE_IMPLS = (Fa3lite.name, Fa3liteDeterministic.name)


def select_impls(names: tuple[str, ...] | None) -> list[Impl]:
    """The implementations named (the default set when None), in table order; unknown names raise
    ValueError."""
    impls = all_impls()
    if not names:
        return [i for i in impls if i.in_default_run]
    unknown = [n for n in names if n not in IMPL_NAMES]
    if unknown:
        raise ValueError(f"impl: expected names from {IMPL_NAMES}, got {unknown}")
    return [i for i in impls if i.name in names]
