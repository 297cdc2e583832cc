"""Sweep forward tile configurations per (head dim, mask); print TFLOP/s per candidate next to cuDNN.

--compile-only checks every candidate compiles spill-free without local memory (on a CPU); on a GPU
each candidate is first checked for accuracy at odd shapes, then timed at 16k tokens a batch
(H = 2048 / d) for S in 1k, 4k, 16k (or --seqlen=a,b,..), with cuDNN (torch SDPA) timed in the same process.
--interleave times the candidates in alternation; --soak-ms=N runs each candidate back to back for N ms
before its timed calls, so each is timed at the clock its own power draw sustains (as the bench does).
--tiles="192,144,2,0,0,1;..." replaces the candidates of the head dims given with these FwdTile
fields (block_m, block_n, stages, overlap, pingpong, persistent).
"""
import sys

from fa3lite import variants
from fa3lite.hopper import fwd as hopper
from fa3lite.runtime.compile import CompileError
from fa3lite.runtime.inspect import spec_info
from fa3lite.variants import FwdTile as T

P = {"persistent": True}
CANDIDATES = {
    64: [T(192, 128, 2, True, False, **P), T(192, 128, 2, True, False), T(192, 128, 3, True, False, **P),
         T(192, 128, 2, True, True, **P), T(128, 128, 2, True, True, **P), T(128, 128, 2, True, False, **P)],
    128: [T(128, 128, 2, True, True), T(128, 128, 2, True, True, **P), T(128, 128, 2, True, False),
          T(128, 128, 2, True, False, **P), T(128, 160, 2, True, True), T(128, 160, 2, True, False),
          T(128, 160, 2, True, True, **P), T(128, 176, 2, True, True), T(128, 176, 2, True, True, **P)],
    256: [T(128, 80, 2, True, True), T(128, 80, 2, True, True, **P), T(128, 80, 2, True, False, **P),
          T(128, 64, 2, True, True, **P)],
}


def use(d, causal, tile):
    """Make `tile` the one hopper.forward picks for (d, causal)."""
    variants.FWD_TILES[(d, causal)] = ((0, tile),)
    hopper._plans.clear()


def compiles(d, tile):
    v = variants.FwdVariant(d, "bf16", True, tile=tile)
    if v.smem_bytes > 227 * 1024:
        return False, "smem"
    try:
        info = spec_info(v.spec(), v.smem_bytes)
    except CompileError as e:
        return False, str(e).splitlines()[-1][:100]
    sass = info.get("sass", {})
    bad = info["spill_bytes"] or info["stack_bytes"] or "LDL" in sass or "STL" in sass
    return (not bad), f"regs {info['registers']} spill {info['spill_bytes']} stack {info['stack_bytes']}"


def interleaved(d, causal, S, tiles, rounds=7, calls=10, soak_ms=0.0):
    """Median ms per candidate (and cuDNN) at one cell, timed in alternation so drifting clocks hit
    every candidate alike; each timed batch after soak_ms of the same call back to back."""
    import torch
    from fwd_smoke import fwd_flops
    from fa3lite.bench.timing import soak
    from torch.nn.attention import SDPBackend, sdpa_kernel

    H, B = 2048 // d, 16384 // S
    q, k, v = (torch.randn(B, S, H, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

    def runner(tile):
        if tile is None:
            def call():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            return call
        return lambda: hopper.forward(q, k, v, d ** -0.5, causal, 0)

    names = ["cudnn"] + [str(tuple(t)) for t in tiles]
    times = {n: [] for n in names}
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(rounds):
        for name, tile in zip(names, [None] + list(tiles)):
            if tile is not None:
                use(d, causal, tile)
            call = runner(tile)
            call()
            call()
            torch.cuda.synchronize()
            soak(lambda _: call(), 1, soak_ms / 1000)
            st.record()
            for _ in range(calls):
                call()
            en.record()
            torch.cuda.synchronize()
            times[name].append(st.elapsed_time(en) / calls)
    flops = fwd_flops(B, H, S, d, causal)
    base = sorted(times["cudnn"])[rounds // 2]
    for name in names:
        ms = sorted(times[name])[rounds // 2]
        print(f"  d={d} {'causal' if causal else 'full'} S={S} {name:<40} {ms:.3f} ms {flops / ms / 1e9:7.1f} TFLOP/s"
              f" {base / ms:.3f}x cuDNN", flush=True)


if __name__ == "__main__":
    only = [int(a) for a in sys.argv[1:] if a.isdigit()]
    dims = only or list(CANDIDATES)
    for a in sys.argv:
        if a.startswith("--tiles="):
            tiles = [T(*(int(x) if i < 3 else bool(int(x)) for i, x in enumerate(t.split(","))))
                     for t in a.split("=", 1)[1].split(";")]
            CANDIDATES.update({d: tiles for d in dims})
    if "--compile-only" in sys.argv:
        for d in dims:
            for c in CANDIDATES[d]:
                print(d, tuple(c), *compiles(d, c), flush=True)
        sys.exit(0)
    sys.path.insert(0, "tools")
    import torch
    from fwd_smoke import bench, bench_sdpa, check

    SEQLENS = next((tuple(int(x) for x in a.split("=")[1].split(",")) for a in sys.argv if a.startswith("--seqlen=")),
                   (1024, 4096, 16384))
    masks = [m == "causal" for m in ("full", "causal") if f"--{m}" in sys.argv] or [False, True]
    soak_ms = next((float(a.split("=")[1]) for a in sys.argv if a.startswith("--soak-ms=")), 0.0)
    if "--interleave" in sys.argv:
        for d in dims:
            good = [c for c in CANDIDATES[d] if compiles(d, c)[0]]
            for causal in masks:
                for c in good:
                    use(d, causal, c)
                    for shape in ((1, 333, 517, 2, 1), (3, 700, 1037, 16, 4), (2, 1500, 300, 16, 8)):
                        assert check(*shape, d, torch.bfloat16, causal), (d, causal, c)
                for S in SEQLENS:
                    interleaved(d, causal, S, good, rounds=5, soak_ms=soak_ms)
        sys.exit(0)
    for d in dims:
        for causal in (False, True):
            for S in (1024, 4096, 16384):
                bench_sdpa(d, causal, S)
        for c in CANDIDATES[d]:
            ok, why = compiles(d, c)
            if not ok:
                print(f"skip d={d} {tuple(c)}: {why}")
                continue
            print(f"== d={d} {c} {why}", flush=True)
            good = True
            for causal in (False, True):
                use(d, causal, c)
                for shape in ((1, 333, 517, 2, 1), (2, 1, 239, 4, 2), (1, 1000, 1000, 3, 3), (2, 64, 64, 2, 1),
                              (3, 700, 1037, 16, 4), (2, 1500, 300, 16, 8)):
                    good &= check(*shape, d, torch.bfloat16, causal)
            if not good:
                print("   WRONG: not timed")
                continue
            for causal in (False, True):
                for S in (1024, 4096, 16384):
                    bench(d, causal, S)
