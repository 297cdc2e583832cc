"""kernel_info: what ptxas and the SASS say about a kernel variant, without a GPU."""
from __future__ import annotations

import collections
import functools
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

from . import cache
from .compile import KernelSpec

_REGS = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_STACK = re.compile(r"(\d+) bytes stack frame")
_SMEM = re.compile(r"(\d+) bytes smem")
_WARNING = re.compile(r"\bwarning\s*[#:]")   # NVRTC's 'x.cuh(226): warning #128-D: ...', ptxas' 'ptxas warning : ...'
_ADDRESS = r"^\s*/\*([0-9a-f]{4,})\*/\s+"   # '/*0d90*/  '
_GUARD = r"(@!?U?P\w+\s+)?"                 # '@!P0 '
_LINE = re.compile(_ADDRESS + _GUARD + r"([A-Z][^;]*);")


@functools.cache
def _tool(name: str) -> str | None:
    """cuobjdump / nvdisasm from PATH or from the nvidia-cuda-* wheels (site-packages/nvidia/cu13/bin)."""
    found = shutil.which(name)
    if found:
        return found
    try:
        import nvidia  # namespace package of the CUDA wheels
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for cand in pathlib.Path(root).glob(f"cu*/bin/{name}"):
            if os.access(cand, os.X_OK):
                return str(cand)
    return None


def sass_text(cubin: bytes) -> str:
    """Disassembly of a cubin (needs cuobjdump and nvdisasm, e.g. from the test extras)."""
    cuobjdump, nvdisasm = _tool("cuobjdump"), _tool("nvdisasm")
    if not cuobjdump or not nvdisasm:
        raise RuntimeError("cuobjdump/nvdisasm not found: pip install 'fa3lite[test]' "
                           "(nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)")
    env = dict(os.environ, PATH=os.path.dirname(nvdisasm) + os.pathsep + os.environ.get("PATH", ""))
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        res = subprocess.run([cuobjdump, "--dump-sass", f.name], capture_output=True, text=True, env=env,
                             check=True)
    return res.stdout


def split_line(line: str) -> tuple[int, str, str] | None:
    """(address, guard predicate or '', instruction) of one listing line: '/*0d90*/  @!P0 BRA 0x3520 ;'
    gives (0xd90, '@!P0', 'BRA 0x3520'); None for a line holding no instruction (cuobjdump's and CuTe
    DSL's listings alike)."""
    m = _LINE.match(line)
    return (int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3).strip()) if m else None


def instructions(sass: str, guards: bool = False) -> list[str]:
    """The instructions in address order, opcode and operands without the guard predicate
    (e.g. 'WARPGROUP.DEPBAR.LE gsb0, 0x1'), or with it where ``guards`` ('@!P0 BRA 0x3520')."""
    rows = filter(None, map(split_line, sass.splitlines()))
    return [f"{guard} {text}" if guards and guard else text for _, guard, text in rows]


def overlap_window(ops: list[str]) -> list[str]:
    """Of `instructions`' output: those from the first partial wgmma wait ('WARPGROUP.DEPBAR.LE
    gsb0, 0x1': one GEMM done, the one issued after it still running) to the next wgmma wait, i.e.
    what the warpgroup does while that GEMM is in flight."""
    start = next(i for i, op in enumerate(ops) if op.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x1"))
    end = next(i for i in range(start + 1, len(ops)) if ops[i].startswith("WARPGROUP.DEPBAR"))
    return ops[start:end]


_NEG_INF_BITS = (", -0x800000", ", 0xff800000")   # -inf as a move's immediate (IMAD.MOV.U32, MOV)
_FLOW = ("BRA", "BSSY", "BSYNC", "EXIT", "RET", "CALL", "WARPSYNC", "BAR", "SYNCS")


def _straight_runs(ops: list[str], also: tuple[str, ...] = ()):
    """The bodies (guards dropped) of `instructions(sass, guards=True)`' output in straight runs, split
    at every branch, convergence point or barrier (and at opcodes starting with one of ``also``); with
    each, whether each instruction was guarded."""
    run = []
    for op in ops:
        guarded = op.startswith("@")
        body = op.split(None, 1)[1] if guarded else op
        if body.startswith(_FLOW + also):
            if run:
                yield run
            run = []
        else:
            run.append((guarded, body))
    if run:
        yield run


def _is_neg_inf_select(guarded: bool, body: str) -> bool:
    return (body.startswith("FSEL") and "-INF" in body) or (guarded and body.endswith(_NEG_INF_BITS))


def mask_select_runs(ops: list[str]) -> list[int]:
    """Of `instructions(sass, guards=True)`' output: how many selects of -inf (a mask hiding scores)
    each straight run of instructions holds, runs split at every branch, convergence point or
    barrier. A mask written without branches puts all of a thread's accumulator entries into one
    run. ptxas writes a select as an FSEL of -INF (NVRTC 13.5) or as a guarded move of its bits
    ('@P1 IMAD.MOV.U32 R9, RZ, RZ, -0x800000' or '@!P1 MOV R55, 0xff800000', NVRTC 13.0; an
    unguarded one sets a register, e.g. a running max, and is no select)."""
    return [selects for selects, _ in mask_run_compares(ops)]


def mask_run_compares(ops: list[str]) -> list[tuple[int, int]]:
    """(selects of -inf, integer compares) of each straight run that holds such selects (as
    mask_select_runs counts them): ISETP per entry where a mask compares columns one by one, a few
    per row where it tests the bits of a visible range (frag::visible_bits)."""
    out = []
    for run in _straight_runs(ops):
        selects = sum(_is_neg_inf_select(g, b) for g, b in run)
        if selects:
            out.append((selects, sum(b.startswith("ISETP") for _, b in run)))
    return out


# Opcodes whose first register operand is not a register they write: stores and reductions (an
# address), compares (they write predicates). A wgmma writes a whole range of registers: runs split there.
_NO_REGISTER_WRITTEN = ("ST", "RED", "ATOM", "ISETP", "FSETP", "DSETP", "HSETP2")


def longest_chain(ops: list[str], opcode: str) -> int:
    """Of `instructions(sass, guards=True)`' output: the longest chain of ``opcode`` instructions (the
    bare opcode, e.g. 'FMNMX') each reading a register the one before wrote, within a straight run
    (split as mask_select_runs does, and at each wgmma). A reduction kept in one running value is
    one chain as long as its inputs; independent partial results make it short. Any other
    instruction that writes a register ends the chain through it: it may under-count, never over."""
    best = 0
    for run in _straight_runs(ops, also=("HGMMA", "WARPGROUP")):
        depth: dict[str, int] = {}
        for _, body in run:
            name, _, args = body.partition(" ")
            regs = re.findall(r"\bR\d+\b", args)
            if not regs or name.startswith(_NO_REGISTER_WRITTEN):
                continue
            link = name.split(".")[0] == opcode
            depth[regs[0]] = 1 + max((depth.get(r, 0) for r in regs[1:]), default=0) if link else 0
            best = max(best, depth[regs[0]])
    return best


def opcode_counts(sass: str) -> dict[str, int]:
    """Opcode (with modifiers, e.g. 'HGMMA.64x128x16.F32.BF16') -> count; also the bare opcode."""
    counts: collections.Counter[str] = collections.Counter()
    for full in (text.split()[0] for text in instructions(sass)):
        counts[full] += 1
        base = full.split(".")[0]
        if base != full:
            counts[base] += 1
    return dict(counts)


def log_warnings(log: str) -> list[str]:
    """The warning lines of an NVRTC / ptxas log (not its closing remark on how to suppress them)."""
    return [line for line in log.splitlines() if _WARNING.search(line)]


def spec_info(spec: KernelSpec, dynamic_smem: int) -> dict:
    """ptxas figures and SASS opcode counts of one compiled spec."""
    compiled = cache.get(spec)
    log = compiled.log
    regs = _REGS.search(log)
    spill = _SPILL.search(log)
    stack = _STACK.search(log)
    static_smem = _SMEM.search(log)
    return {
        "registers": int(regs.group(1)) if regs else None,
        "spill_bytes": int(spill.group(1)) + int(spill.group(2)) if spill else 0,
        "stack_bytes": int(stack.group(1)) if stack else 0,
        "smem_bytes": dynamic_smem + (int(static_smem.group(1)) if static_smem else 0),
        "sass": opcode_counts(sass_text(compiled.cubin)),
        "ptxas_log": log,
        "warnings": log_warnings(log),
        "cubin_bytes": len(compiled.cubin),
    }


def kernel_info(kind: str, head_dim: int = 128, dtype: str = "bf16", causal: bool = False) -> dict:
    """ptxas report and SASS opcode counts of one kernel variant; needs no GPU.

    kind: "fwd" or "bwd"; dtype: "bf16" | "fp16" (torch dtypes accepted). Returns a dict with
    registers, spill_bytes, stack_bytes, smem_bytes (dynamic + static), sass ({opcode: count}),
    ptxas_log and the variant's tile sizes. "bwd" reports the main backward kernel.
    """
    dtype = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}.get(str(dtype), dtype)
    if kind == "fwd":
        from ..variants import FwdVariant

        v = FwdVariant(head_dim, dtype, bool(causal))
        info = spec_info(v.spec(), v.smem_bytes)
        info.update(kind=kind, block_m=v.block_m, block_n=v.block_n, stages=v.stages, threads=v.threads)
        return info
    if kind == "bwd":
        from ..hopper import bwd as hopper_bwd

        spec, smem, extra = hopper_bwd.main_kernel_spec(head_dim, dtype, bool(causal))
        info = spec_info(spec, smem)
        info.update(kind=kind, **extra)
        return info
    raise ValueError(f"kind must be 'fwd' or 'bwd', got {kind!r}")
