"""FA4's Hopper kernels beside ours in SASS, on a CPU: no GPU, no device call.

FA4 (flash-attn-4, CuTe DSL) compiles for sm_90a without a GPU when its arch is given
(FLASH_ATTENTION_ARCH, CUTE_DSL_ARCH) and its inputs are fake tensors; CUTE_DSL_KEEP=sass leaves the
disassembly. This compiles FA4's forward or backward for one case, compiles ours for the same case,
and prints each main kernel's consumer loop (the shortest loop holding >= 8 wgmma) as opcode counts,
and with --order the loop's opcodes in issue order (runs of one opcode folded). The loop is static
code: where a kernel branches inside it (ours: the masked path, the O rescale), every path counts.

Set-up, once (FA4 and its CuTe DSL wheels for this machine's Python, into .peers/cpu_site; again
after ../shared/tools/stage-fa4.sh, which starts .peers afresh):
    bash tools/fa4_cpu_site.sh
Usage:
    python tools/fa4_sass.py fwd|bwd D full|causal [--order] [--keep DIR]
16k tokens, width 2048, bf16, as the bench's cells (the shapes only pick FA4's tile config).
"""
import collections
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import types

from fa3lite.runtime.inspect import sass_text, split_line

ROOT = pathlib.Path(__file__).resolve().parent.parent
SITE = ROOT / ".peers" / "cpu_site"
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_TARGET = re.compile(r"BRA\s+(?:0x([0-9a-f]+)|`\((\.L_x_\d+)\))")
_RETRY = ("SYNCS.PHASECHK", "NANOSLEEP")   # an mbarrier wait's retry branch, not a loop of the algorithm


def parse(sass: str) -> list[tuple[int, str, int | None]]:
    """(address, instruction without guard, target or None) in address order, the target kept for a
    guarded backward branch only (a loop's; an unconditional one returns from an out-of-line stub);
    cuobjdump's (0x1a0) and CuTe DSL's (`(.L_x_3)`) listings alike."""
    rows, labels, pending = [], {}, []
    for line in sass.splitlines():
        m = _LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        row = split_line(line)
        if row:
            labels.update((name, row[0]) for name in pending)
            pending = []
            rows.append(row)
    out = []
    for addr, guard, text in rows:
        target = None
        t = _TARGET.search(text)
        if t and guard:
            target = int(t.group(1), 16) if t.group(1) else labels.get(t.group(2))
            target = target if target is not None and target <= addr else None
        out.append((addr, text, target))
    return out


def opcode(text: str) -> str:
    return text.split()[0]


def consumer_loop(rows) -> list[str]:
    """The shortest loop (a backward branch and its target) holding >= 8 wgmma and no EXIT: the
    consumer's main loop; an mbarrier retry branch does not count."""
    best = None
    for i, (addr, text, target) in enumerate(rows):
        if target is None or (i and opcode(rows[i - 1][1]).startswith(_RETRY)):
            continue
        body = [t for a, t, _ in rows if target <= a <= addr]
        if any(opcode(t) == "EXIT" for t in body):
            continue
        if sum(opcode(t).startswith("HGMMA") for t in body) >= 8 and (best is None or len(body) < len(best)):
            best = body
    return best or []


def folded(ops: list[str]) -> str:
    out, prev, n = [], None, 0
    for op in ops + [None]:
        if op == prev:
            n += 1
            continue
        if prev is not None:
            out.append(f"{prev} x{n}" if n > 1 else prev)
        prev, n = op, 1
    return ", ".join(out)


def report(name: str, sass: str, order: bool) -> None:
    loop = consumer_loop(parse(sass))
    ops = [opcode(t) for t in loop]
    counts = collections.Counter(ops)
    print(f"{name}: consumer loop {len(ops)} instructions, HGMMA {sum(v for k, v in counts.items() if k.startswith('HGMMA'))}")
    print("  " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    if order:
        print("  order: " + folded(ops))


def fa4_sass(mode: str, d: int, causal: bool, keep: pathlib.Path) -> list[pathlib.Path]:
    """Compiles FA4's kernels for the case in a child process (its environment set before any import)
    and returns the .sass files it left in ``keep``."""
    env = dict(os.environ, FLASH_ATTENTION_ARCH="sm_90", CUTE_DSL_ARCH="sm_90a", CUTE_DSL_KEEP="sass",
               FLASH_ATTENTION_NUM_SMS="132",
               PYTHONPATH=os.pathsep.join([str(SITE), str(SITE / "nvidia_cutlass_dsl" / "dsl_packages")]))
    keep.mkdir(parents=True, exist_ok=True)
    before = set(keep.glob("*.sass"))
    subprocess.run([sys.executable, __file__, "--child", mode, str(d), "causal" if causal else "full"], cwd=keep,
                   env=env, check=True)
    return sorted(set(keep.glob("*.sass")) - before)


def _child(mode: str, d: int, causal: bool) -> None:
    # quack (an FA4 dependency) imports triton for its autotuner at import time; the CPU build of
    # torch has no triton and FA4's attention never autotunes, so a stand-in takes its place.
    stub = types.ModuleType("quack.autotuner")
    stub.autotune = lambda *a, **k: (lambda f: f)
    stub.AutotuneConfig = type("AutotuneConfig", (), {"__init__": lambda self, *a, **k: None})
    sys.modules["quack.autotuner"] = stub
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from flash_attn.cute import interface

    seqlen, heads = 16384, 2048 // d
    with FakeTensorMode(allow_non_fake_inputs=True):
        q, k, v, o, do = (torch.empty(1, seqlen, heads, d, dtype=torch.bfloat16, device="cuda") for _ in range(5))
        if mode == "fwd":
            interface._flash_attn_fwd(q, k, v, causal=causal)
        else:
            lse = torch.empty(1, heads, seqlen, dtype=torch.float32, device="cuda")
            interface._flash_attn_bwd(q, k, v, o, do, lse, causal=causal)


def ours_sass(mode: str, d: int, causal: bool) -> str:
    from fa3lite.runtime.compile import compile_spec
    from fa3lite.variants import FwdVariant, fwd_tile

    if mode == "fwd":
        v = FwdVariant(d, "bf16", causal, tile=fwd_tile(d, causal, 16384))
    else:
        from fa3lite.hopper.bwd import BwdVariant
        v = BwdVariant(d, "bf16", causal)
    return sass_text(compile_spec(v.spec()).cubin)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        _child(argv[1], int(argv[2]), argv[3] == "causal")
        return
    mode, d, mask = argv[0], int(argv[1]), argv[2]
    order = "--order" in argv
    keep = pathlib.Path(argv[argv.index("--keep") + 1]) if "--keep" in argv else pathlib.Path(tempfile.mkdtemp())
    if not SITE.is_dir():
        sys.exit(f"{SITE} is missing: run bash tools/fa4_cpu_site.sh first")
    main_kernel = "Forward" if mode == "fwd" else "BackwardSm90"
    for path in fa4_sass(mode, d, mask == "causal", keep):
        if main_kernel in path.name:
            report(f"FA4 {mode} d={d} {mask} ({path.name[:60]}...)", path.read_text(), order)
    report(f"fa3lite {mode} d={d} {mask}", ours_sass(mode, d, mask == "causal"), order)
    print(f"FA4's SASS: {keep}")


if __name__ == "__main__":
    main(sys.argv[1:])
