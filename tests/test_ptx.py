"""Unit tests of the PTX wrappers (cuda_src/ptx/*.cuh), one small kernel each in cuda_src/tests/ptx_tests.cu.

CPU (CI): every test kernel compiles with NVRTC for sm_90a without spills (ptxas performance warnings
C7508/C7511/C7517 are compile errors in the runtime) and its SASS holds the instructions the wrappers
must produce. GPU (``gpu`` marker, Hopper only): every kernel runs on poisoned torch tensors and each
element it writes is compared with a value computed here with torch.
"""
from __future__ import annotations

import dataclasses
import functools
import pathlib
import re
import struct
import subprocess
import sys
import textwrap

import pytest
import torch
from conftest import requires_hopper

from fa3lite.runtime import cache, debug, launch, tma
from fa3lite.runtime.compile import CompileError, KernelSpec, compile_spec
from fa3lite.runtime.inspect import opcode_counts, sass_text
from fa3lite.runtime.params import ParamStruct

SOURCE = "tests/ptx_tests.cu"
SWIZZLE_ALIGN = 1024           # regions of 128B-swizzled tiles start on this boundary
# Values the kernels write, mirrored from ptx_tests.cu:
POISON32 = 0xDEADBEEF          # kPoison: shared memory that no copy should have written
STORE_PATTERN = (0x1000, 131, 3)   # tile element (r, col) of ptx_test_tma_store: base + 131 r + 3 col
SMEM_FILL = 0x5A000000         # kSmemFill of ptx_test_smem: word w of warp g holds FILL | g << 8 | w
STMATRIX_SLOT_STRIDE = 13      # kSlotStride: row k of matrix q lands in slot 13 (8 q + k) % 32
STMATRIX_CODE = 0x8000         # 16-bit element code: 0x8000 | g << 9 | q << 6 | row << 3 | col


def _reduce_value(e: torch.Tensor) -> torch.Tensor:
    """What ptx_test_tma_reduce adds for flat box element e (exact in f32)."""
    return (e % 97) * 0.25 - 12.0


@dataclasses.dataclass(frozen=True)
class PtxKernel:
    """One test kernel: its extern "C" name, the host mirror of its parameter struct and the SASS
    opcodes (prefixes such as 'UTMALDG.2D') its cubin must contain."""

    name: str
    params: ParamStruct
    sass: tuple[str, ...]
    waits_on_mbarriers: bool = False   # GPU runs use a debug build: a lost arrival traps, not hangs

    def spec(self, debug: bool = False, extra: tuple[tuple[str, str], ...] = ()) -> KernelSpec:
        defines = (("FA3LITE_BUILD_" + self.name, "1"),) + extra + self.params.layout_defines()
        return KernelSpec(SOURCE, self.name, defines, debug=debug)


def _ptrs(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple((n, "ptr") for n in names)


MBAR = PtxKernel(
    "ptx_test_mbar", ParamStruct("MbarParams", _ptrs("src", "copy", "obs", "seen")),
    ("SYNCS.EXCH.64", "SYNCS.ARRIVE.TRANS64", "SYNCS.PHASECHK.TRANS64.TRYWAIT", "UBLKCP"), True)
TMA_LOAD = PtxKernel(
    "ptx_test_tma_load",
    ParamStruct("TmaLoadParams", (("m2", "tma"), ("m3", "tma"), ("m4", "tma"), ("m5", "tma"))
                + _ptrs("cfg", "out") + (("total_words", "i32"),)),
    ("UTMALDG.2D", "UTMALDG.3D", "UTMALDG.4D", "UTMALDG.5D", "UTMACCTL.PF", "ELECT", "SYNCS.EXCH.64",
     "SYNCS.PHASECHK.TRANS64.TRYWAIT", "FENCE.VIEW.ASYNC.S"), True)
TMA_STORE = PtxKernel(
    "ptx_test_tma_store",
    ParamStruct("TmaStoreParams", (("o", "tma"), ("row0", "i32"), ("head", "i32"), ("batch", "i32"))),
    ("UTMASTG.5D", "FENCE.VIEW.ASYNC.S", "DEPBAR.LE", "STS"))
TMA_REDUCE = PtxKernel(
    "ptx_test_tma_reduce",
    ParamStruct("TmaReduceParams", (("g", "tma"),) + _ptrs("tensor", "readback")
                + tuple((n, "i32") for n in ("numel", "c0", "c1", "c2", "c3"))),
    ("UTMAREDG.4D.ADD", "DEPBAR.LE", "FENCE.VIEW.ASYNC.G", "FENCE.VIEW.ASYNC.S"))
MATH = PtxKernel(
    "ptx_test_math",
    ParamStruct("MathParams", _ptrs("x", "y", "lo", "hi", "bits_bf16", "bits_f16", "ex2", "lg2", "rcp", "ninf",
                                    "pack_bf16", "pack_f16", "tof_bf16", "tof_f16", "shfl")),
    ("MUFU.EX2", "MUFU.LG2", "MUFU.RCP", "F2FP.BF16.F32.PACK_AB", "F2FP.F16.F32.PACK_AB", "SHFL.BFLY"))
SMEM = PtxKernel(
    "ptx_test_smem", ParamStruct("SmemParams", _ptrs("words", "vec")),
    ("STSM.16.M88.4", "STS", "LDS", "STS.128", "LDS.64"))
ELECT = PtxKernel("ptx_test_elect", ParamStruct("ElectParams", _ptrs("out")), ("ELECT",))
SETMAXNREG = PtxKernel(
    "ptx_test_setmaxnreg", ParamStruct("SetmaxnregParams", _ptrs("in", "out")),
    ("USETMAXREG.DEALLOC", "USETMAXREG.TRY_ALLOC"))
NAMED_BARRIER = PtxKernel(
    "ptx_test_named_barrier", ParamStruct("NamedBarrierParams", _ptrs("out")), ("BAR.SYNC", "BAR.ARV"))
BULK_GMEM = PtxKernel(
    "ptx_test_bulk_gmem", ParamStruct("BulkGmemParams", _ptrs("acc", "flag", "seen", "acc4")),
    ("UBLKRED", "LDG.E.STRONG.GPU", "REDG.E.ADD.S32.STRONG.GPU", "REDG.E.ADD.F32x4", "FENCE.VIEW.ASYNC.G",
     "DEPBAR.LE"))
BULK_CLAIM = PtxKernel(
    "ptx_test_bulk_claim", ParamStruct("BulkClaimParams", _ptrs("acc", "word", "tickets")),
    ("UBLKCP.G.S", "UBLKRED", "ATOMG.E.ADD.S32.STRONG.GPU", "LDG.E.STRONG.GPU", "REDG.E.ADD.S32.STRONG.GPU",
     "FENCE.VIEW.ASYNC.G", "DEPBAR.LE"))

WGMMA_PARAMS = ParamStruct("WgmmaParams", _ptrs("a", "b", "c", "d") + tuple(
    (n, "i32") for n in ("rs", "trans_b", "accumulate")))
WGMMA_SHAPES = (("bf16", 64), ("bf16", 128), ("bf16", 256), ("f16", 64), ("f16", 128))
WGMMA = {
    (dt, n): PtxKernel(f"ptx_test_wgmma_{dt}_n{n}", WGMMA_PARAMS,
                       (f"HGMMA.64x{n}x16.F32", "WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR.LE", "FENCE.VIEW.ASYNC.S",
                        f"F2FP.{dt.upper()}.F32.PACK_AB"))
    for dt, n in WGMMA_SHAPES
}
WGMMA_STEPS = 4                # k16 steps of K = 64
WGMMA_VARIANTS = 4             # (SS, RS) x (K-major B, MN-major B) in each kernel

# Debug builds only (a release build of it would hang): run in a child process, the trap ends the context.
MBAR_STUCK = PtxKernel("ptx_test_mbar_stuck", ParamStruct("MbarStuckParams", (("stuck_block", "i32"),
                                                                            ("stuck_thread", "i32"))),
                       ("BPT.TRAP",), True)

KERNELS = [MBAR, TMA_LOAD, TMA_STORE, TMA_REDUCE, MATH, SMEM, ELECT, SETMAXNREG, NAMED_BARRIER, BULK_GMEM,
           BULK_CLAIM, *WGMMA.values()]


@pytest.fixture(autouse=True, scope="module")
def _private_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FA3LITE_CACHE_DIR", str(tmp_path_factory.mktemp("ptx_cache")))
    yield
    mp.undo()


@functools.cache
def _sass(kernel: PtxKernel) -> str:
    return sass_text(cache.get(kernel.spec()).cubin)


def _has(counts: dict[str, int], prefix: str) -> bool:
    return any(k == prefix or k.startswith(prefix + ".") for k in counts)


# ---------------------------------------------------------------------------------------------------
# CPU: compile, resources, SASS


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_kernel_compiles_without_spills_and_has_its_sass(kernel):
    compiled = cache.get(kernel.spec())
    log = compiled.log
    if not log:
        pytest.skip("this cuda.core build returns no ptxas log on success (seen with cuda-core 1.2.0)")
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
    assert not re.search(r"\bC75\d\d\b", log), log
    counts = opcode_counts(_sass(kernel))
    missing = [op for op in kernel.sass if not _has(counts, op)]
    assert not missing, f"{kernel.name}: SASS lacks {missing}"
    assert "LDL" not in counts and "STL" not in counts, "local memory in the SASS"


@pytest.mark.parametrize("kernel", [k for k in KERNELS if k.waits_on_mbarriers], ids=lambda k: k.name)
def test_debug_build_compiles(kernel):
    # The GPU tests run these as debug builds (bounded mbarrier waits trap instead of hanging).
    assert len(cache.get(kernel.spec(debug=True)).cubin) > 0


def test_debug_build_carries_the_report_globals():
    # debug.attach looks these up by name in every debug module; release builds have neither.
    cubin = cache.get(MBAR_STUCK.spec(debug=True)).cubin
    assert b"fa3lite_debug_report" in cubin and b"fa3lite_debug_module" in cubin
    assert "BPT.TRAP" in opcode_counts(sass_text(cubin))
    assert b"fa3lite_debug_report" not in cache.get(MBAR.spec()).cubin


def test_debug_report_decodes_each_field():
    modules = ["", "k1 [X=1] on cuda:0", "k2 [] on cuda:1"]
    # words: module, kind | detail << 4 | thread << 8, value, block (cuda_src/ptx/debug.cuh give_up)
    message = debug.decode(struct.pack("<4I", 2, 1 | 1 << 4 | 300 << 8, 0x1A40, 70000), modules)
    assert message.endswith("k2 [] on cuda:1, block 70000 (linear index), thread 300: "
                            "mbarrier wait (barrier at shared 0x1a40, phase parity 1)")
    turn = debug.decode(struct.pack("<4I", 1, 2 | 5 << 8, 9, 3), modules)
    assert turn.endswith("k1 [X=1] on cuda:0, block 3 (linear index), thread 5: deterministic dQ turn (awaited turn 9)")
    assert debug.decode(bytes(16), modules) is None
    assert "module #7 (not loaded by this process)" in debug.decode(struct.pack("<4I", 7, 1, 0, 0), modules)


def test_debug_attach_leaves_a_module_without_the_globals(monkeypatch):
    # A debug build with no bounded wait in it has no report globals: loading it must not fail.
    import contextlib

    from cuda.bindings import driver

    asked = []
    monkeypatch.setattr(debug, "on_device", lambda index: contextlib.nullcontext())
    monkeypatch.setattr(driver, "cuModuleGetGlobal",
                        lambda module, name: asked.append(name) or (driver.CUresult.CUDA_ERROR_NOT_FOUND, 0, 0))
    monkeypatch.setattr(debug, "_buffer", lambda index: pytest.fail("allocated a report buffer"))
    debug.attach(object(), "k [] on cuda:0", 0)
    assert asked == [b"fa3lite_debug_report"]


@pytest.mark.parametrize("shape", WGMMA_SHAPES, ids=lambda s: f"{s[0]}-n{s[1]}")
def test_wgmma_sass_forms(shape):
    """Each kernel issues 4 k16 steps in 4 variants: SS/RS x trans-b 0/1, in two commit groups."""
    dt, n = shape
    sass = _sass(WGMMA[shape])
    lines = [ln for ln in sass.splitlines() if re.search(rf"\bHGMMA\.64x{n}x16\.F32\b", ln)]
    assert len(lines) == WGMMA_STEPS * WGMMA_VARIANTS
    if dt == "bf16":
        assert all(".BF16" in ln for ln in lines)
    else:
        assert not any(".BF16" in ln for ln in lines)
    # trans-b = 1 reaches the hardware as a transposed B descriptor
    assert sum(".tnspB" in ln for ln in lines) == WGMMA_STEPS * WGMMA_VARIANTS // 2
    # RS: A comes from registers ("HGMMA... Rd, Ra, gdesc[...]"), SS: both operands are descriptors
    assert sum(bool(re.search(r"HGMMA\S*\s+R\d+, R\d+, gdesc", ln)) for ln in lines) == WGMMA_STEPS * 2
    # two commit groups per variant: wait_group<1> then wait_group<0>
    assert len(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1", sass)) == WGMMA_VARIANTS
    assert len(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0", sass)) == WGMMA_VARIANTS


def test_setmaxnreg_kernel_keeps_its_register_plan():
    compiled = cache.get(SETMAXNREG.spec())
    counts = opcode_counts(_sass(SETMAXNREG))
    assert counts.get("USETMAXREG.DEALLOC.CTAPOOL") == 1 and counts.get("USETMAXREG.TRY_ALLOC.CTAPOOL") == 1
    assert "C7508" not in compiled.log
    # 384 threads at entry get 65536 / 384 registers, rounded down to a multiple of 8
    assert "Used 168 registers" in compiled.log, compiled.log


def test_setmaxnreg_without_entry_register_cap_is_rejected():
    """Negative control of the C7508 check: __launch_bounds__(384) alone leaves the entry register
    count open, ptxas ignores setmaxnreg and the runtime's compile refuses the kernel."""
    with pytest.raises(CompileError, match="C7508"):
        compile_spec(SETMAXNREG.spec(extra=(("FA3LITE_PTX_TEST_NO_MIN_BLOCKS", "1"),)))


def test_params_size_mismatch_is_a_compile_error():
    bad = tuple((k, str(int(v) + 8) if k == "FA3LITE_PARAMS_SIZE" else v) for k, v in ELECT.spec().defines)
    with pytest.raises(CompileError, match="ElectParams"):
        compile_spec(KernelSpec(SOURCE, ELECT.name, bad))


def test_named_barrier_ids_are_constants():
    # Compile-time barrier ids keep ptxas' count at 3 (0 for __syncthreads, kFull, kFree), not 16.
    assert "used 3 barriers" in cache.get(NAMED_BARRIER.spec()).log


# ---------------------------------------------------------------------------------------------------
# GPU helpers

gpu = pytest.mark.gpu


def _dev() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device())


def _run(kernel: PtxKernel, grid: int, block: int, smem: int = 0, **values) -> None:
    """Launch ``kernel`` (a debug build if it waits on mbarriers) with its struct packed from ``values``
    (tensors become their data pointers) and wait for it, so that a fault surfaces here."""
    dev = torch.cuda.current_device()
    torch.cuda.synchronize()
    packed = {k: (v.data_ptr() if isinstance(v, torch.Tensor) else v) for k, v in values.items()}
    loaded = launch.load(kernel.spec(debug=kernel.waits_on_mbarriers), dev, smem)
    launch.launch(loaded, (grid, 1, 1), block, kernel.params.pack(**packed), dev,
                  torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()


def _u32(t: torch.Tensor) -> torch.Tensor:
    """int32 tensor -> int64 on the CPU holding the unsigned 32-bit values."""
    return t.cpu().to(torch.int64) & 0xFFFFFFFF


def _u16_bits(t: torch.Tensor) -> torch.Tensor:
    """16-bit float tensor -> int64 on the CPU holding its bit patterns."""
    return t.cpu().contiguous().view(torch.int16).to(torch.int64) & 0xFFFF


def _box_slices(shape, coords, box):
    """(source, destination) slices of a TMA box: ``coords``/``box`` innermost first, ``shape`` outermost
    first. Elements of the box outside the tensor are in neither."""
    src, dst = [], []
    for c, b, n in zip(reversed(coords), reversed(box), shape):
        lo, hi = max(c, 0), min(c + b, n)
        assert lo < hi, "test boxes overlap the tensor in every dimension"
        src.append(slice(lo, hi))
        dst.append(slice(lo - c, hi - c))
    return tuple(src), tuple(dst)


def _box_image(view: torch.Tensor, coords, box, swizzle: bool) -> torch.Tensor:
    """Bytes a TMA load of ``box`` at ``coords`` leaves in shared memory (uint8, CPU): out-of-bounds
    elements zero; with the 128B swizzle, 16-byte chunk c of 128-byte row r moved to chunk c ^ (r % 8).
    ``view`` lists the map's dims outermost first."""
    img = torch.zeros(tuple(reversed(box)), dtype=view.dtype)
    src, dst = _box_slices(view.shape, coords, box)
    img[dst] = view[src].cpu()
    raw = img.contiguous().view(torch.uint8).reshape(-1)
    if not swizzle:
        return raw
    chunks = raw.view(-1, 16)
    idx = torch.arange(chunks.shape[0])
    row = idx // 8
    out = torch.empty_like(chunks)
    out[row * 8 + ((idx % 8) ^ (row % 8))] = chunks
    return out.reshape(-1)


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


# ---------------------------------------------------------------------------------------------------
# GPU: mbarrier


@gpu
@requires_hopper
def test_mbar_phases_tx_and_handshake():
    d = _dev()
    src = torch.randint(-2**31, 2**31 - 1, (256,), dtype=torch.int32, device=d)
    copy = torch.full((256,), -1, dtype=torch.int32, device=d)
    obs = torch.full((8,), -7, dtype=torch.int32, device=d)
    seen = torch.full((96,), -7, dtype=torch.int32, device=d)
    _run(MBAR, 1, 64, src=src, copy=copy, obs=obs, seen=seen)
    # try_wait(parity) is true iff the phase with that parity completed (the one before phase 0 counts)
    assert obs.tolist() == [1, 0, 0, 1, 0, 0, 1, 0]
    assert torch.equal(copy, src), "bulk copy completing the announced transaction bytes"
    assert seen[:32].tolist() == [1000] * 32
    assert seen[32:64].tolist() == [1001] * 32
    assert seen[64:].tolist() == [2000 + i for i in range(32)]


_STUCK_CHILD = """
import time, torch
from fa3lite.runtime import debug, launch
from test_ptx import MBAR_STUCK
dev = torch.cuda.current_device()
loaded = launch.load(MBAR_STUCK.spec(debug=True), dev, 0)
start = time.monotonic()
launch.launch(loaded, (3, 1, 1), 64, MBAR_STUCK.params.pack(stuck_block=2, stuck_thread=37), dev,
              torch.cuda.current_stream().cuda_stream)
try:
    torch.cuda.synchronize()
    print("no error")
except Exception as exc:
    print("error:", exc)
print(f"seconds: {time.monotonic() - start:.1f}")
print("report:", debug.report())
"""


@gpu
@requires_hopper
def test_debug_wait_gives_up_with_a_report():
    # A wait nobody ends: the debug build gives up (H200: after 17 s; its trap surfaces as "unspecified
    # launch failure", which names nothing) and says where (thread 37 of block 2, parity 0), both
    # through debug.report() and on stderr at exit. A child process: the trap ends the CUDA context
    # for the rest of the process.
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(_STUCK_CHILD)], capture_output=True, text=True,
                         timeout=180, cwd=str(pathlib.Path(__file__).parent))
    out = res.stdout
    assert "error:" in out and "no error" not in out, out + res.stderr
    seconds = float(re.search(r"seconds: ([\d.]+)", out).group(1))
    assert seconds < 60, f"the bounded wait took {seconds} s to give up"
    line = re.search(r"report: (.*)", out).group(1)
    assert "ptx_test_mbar_stuck" in line and "block 2 (linear index), thread 37: mbarrier wait" in line, line
    assert "phase parity 0" in line, line
    assert line in res.stderr, "the report printed at exit"


# ---------------------------------------------------------------------------------------------------
# GPU: TMA


def _tma_load_inputs(d):
    """Four tensors and maps: 2-D bf16 (no swizzle, 64-byte rows), 3-D f32 and 4-D bf16 (128B swizzle),
    5-D bshd map of a strided (B, S, H, D) bf16 view. Returns (maps, views, swizzled, boxes)."""
    t2 = torch.randn(50, 48, device=d).to(torch.bfloat16)
    t3 = torch.randn(4, 40, 32, device=d)
    t4 = torch.randn(2, 3, 24, 64, device=d).to(torch.bfloat16)
    t5 = torch.randn(2, 100, 5, 128, device=d).to(torch.bfloat16)[:, :, 1:4]   # H stride 128, S stride 640
    boxes = ([32, 32], [32, 16, 2], [64, 16, 2, 1], [64, 64, 2, 1, 1])
    maps = (
        tma.encode(t2.data_ptr(), t2.dtype, [48, 50], [96], boxes[0], t2.device.index, swizzle_128b=False),
        tma.encode(t3.data_ptr(), t3.dtype, [32, 40, 4], [128, 40 * 128], boxes[1], t3.device.index),
        tma.encode(t4.data_ptr(), t4.dtype, [64, 24, 3, 2], [128, 24 * 128, 3 * 24 * 128], boxes[2],
                   t4.device.index),
        tma.bshd_map(t5, 64),
    )
    B, S, H, D = t5.shape
    v5 = t5.unflatten(3, (D // 64, 64)).permute(0, 2, 3, 1, 4)   # (B, H, D/64, S, 64): the map's dims reversed
    return maps, (t2, t3, t4, v5), (False, True, True, True), boxes


TMA_LOAD_CASES = {
    # coords per map, innermost first
    "inside": ([0, 8], [0, 8, 1], [0, 0, 1, 1], [0, 16, 0, 2, 1]),
    # partly out of bounds: past the end in several dims, and at negative coordinates
    "edges": ([32, 30], [0, -8, 3], [0, 16, 2, 1], [0, 64, 0, 1, 0]),
}


@gpu
@requires_hopper
@pytest.mark.parametrize("case", sorted(TMA_LOAD_CASES))
def test_tma_load_2d_to_5d(case):
    d = _dev()
    maps, views, swizzled, boxes = _tma_load_inputs(d)
    coords = TMA_LOAD_CASES[case]
    box_bytes = [views[i].element_size() * torch.Size(boxes[i]).numel() for i in range(4)]
    cfg = torch.tensor([c for cs in coords for c in cs] + box_bytes, dtype=torch.int32, device=d)
    region = [_round_up(b, SWIZZLE_ALIGN) for b in box_bytes]
    total = sum(region)
    out = torch.zeros(total // 4, dtype=torch.int32, device=d)
    _run(TMA_LOAD, 1, 128, smem=total + SWIZZLE_ALIGN, m2=maps[0], m3=maps[1], m4=maps[2], m5=maps[3],
         cfg=cfg, out=out, total_words=total // 4)

    got = out.cpu().view(torch.uint8)
    poison = torch.tensor([POISON32 - (1 << 32)], dtype=torch.int32).view(torch.uint8)
    start = 0
    for i in range(4):
        expected = poison.repeat(region[i] // 4)      # the padding after each box stays poisoned
        img = _box_image(views[i], coords[i], boxes[i], swizzled[i])
        assert img.numel() == box_bytes[i]
        expected[:box_bytes[i]] = img
        assert torch.equal(got[start:start + region[i]], expected), f"{i + 2}-D box: shared memory image differs"
        start += region[i]


@gpu
@requires_hopper
@pytest.mark.parametrize("seqlen,row0", [(40, 0), (100, 64)])
def test_tma_store_after_proxy_fence_clips_rows(seqlen, row0):
    d = _dev()
    B, H, D, rows, pad = 2, 3, 128, 64, 64
    sentinel = 0x7FA5
    buf = torch.full((B, seqlen + pad, H, D), sentinel, dtype=torch.int16, device=d)
    out = buf.view(torch.bfloat16)[:, :seqlen]          # rows past seqlen exist in memory but not in the map
    head, batch = 1, 1
    _run(TMA_STORE, 1, 128, smem=rows * D * 2 + SWIZZLE_ALIGN,
         o=tma.bshd_map(out, rows, box_col_blocks=1), row0=row0, head=head, batch=batch)

    r = torch.arange(rows)[:, None]
    col = torch.arange(D)[None, :]
    base, row_mul, col_mul = STORE_PATTERN
    pattern = base + row_mul * r + col_mul * col
    expected = torch.full(buf.shape, sentinel, dtype=torch.int64)
    expected[batch, row0:seqlen, head, :] = pattern[:seqlen - row0]
    assert torch.equal(buf.cpu().to(torch.int64) & 0xFFFF, expected)


@gpu
@requires_hopper
# Only boxes past the end: a reduce at negative coordinates stopped an H200 with "illegal instruction"
# (2026-11-22), so that case is left to loads, where it is defined.
@pytest.mark.parametrize("coords", [(0, 8, 1, 1), (0, 12, 2, 1)], ids=["past-end", "past-end-3d"])
def test_tma_reduce_add_f32_twice(coords):
    d = _dev()
    g = (torch.randint(-400, 400, (2, 3, 20, 32), device=d) / 4).float()   # exact sums
    g0 = g.clone().cpu()
    box = [32, 16, 2, 1]
    tmap = tma.encode(g.data_ptr(), torch.float32, [32, 20, 3, 2], [128, 20 * 128, 3 * 20 * 128], box,
                      g.device.index, swizzle_128b=False)
    readback = torch.full((g.numel(),), float("nan"), device=d)
    _run(TMA_REDUCE, 1, 128, smem=4 * 32 * 16 * 2 + SWIZZLE_ALIGN, g=tmap, tensor=g, readback=readback,
         numel=g.numel(), c0=coords[0], c1=coords[1], c2=coords[2], c3=coords[3])

    e = torch.arange(32 * 16 * 2 * 1)
    added = 2 * _reduce_value(e).reshape(tuple(reversed(box)))
    expected = g0.clone()
    src, dst = _box_slices(g0.shape, list(coords), box)
    expected[src] += added[dst]
    assert torch.equal(g.cpu(), expected)
    assert torch.equal(readback.cpu(), expected.reshape(-1)), "issuing thread after wait_group<0> + fence"


# ---------------------------------------------------------------------------------------------------
# GPU: wgmma

_TORCH_DTYPE = {"bf16": torch.bfloat16, "f16": torch.float16}


@gpu
@requires_hopper
@pytest.mark.parametrize("shape", WGMMA_SHAPES, ids=lambda s: f"{s[0]}-n{s[1]}")
def test_wgmma_against_torch(shape):
    dt, n = shape
    d = _dev()
    gen = torch.Generator(device="cpu").manual_seed(n)
    # multiples of 1/8 in [-2, 2): products and 64-term sums are exact in f32, so any layout or
    # descriptor mistake shows as a difference of at least 1/64
    a = (torch.randint(-16, 16, (64, 64), generator=gen) / 8).to(_TORCH_DTYPE[dt])
    bmat = (torch.randint(-16, 16, (64, n), generator=gen) / 8).to(_TORCH_DTYPE[dt])      # [k][n]
    c = torch.randint(-64, 64, (64, n), generator=gen) / 16
    for rs in (0, 1):
        for trans_b in (0, 1):
            b = bmat if trans_b else bmat.t().contiguous()    # MN-major [k][n] or K-major [n][k]
            for accumulate in (0, 1):
                out = torch.full((64, n), float("nan"), device=d)
                _run(WGMMA[shape], 1, 128, smem=64 * 128 + n * 128 + SWIZZLE_ALIGN,
                     a=a.to(d), b=b.to(d), c=c.to(d), d=out, rs=rs, trans_b=trans_b, accumulate=accumulate)
                ref = a.double() @ bmat.double() + (c.double() if accumulate else 0)
                torch.testing.assert_close(out.cpu(), ref.float(), rtol=0, atol=1e-3,
                                           msg=lambda m: f"rs={rs} trans_b={trans_b} accumulate={accumulate}: {m}")


# ---------------------------------------------------------------------------------------------------
# GPU: math


def _math_inputs():
    """256 values each; specials first, then a sweep."""
    gen = torch.Generator().manual_seed(0)
    inf = float("inf")
    x = torch.cat([torch.tensor([-inf, -200.0, -126.5, -1.0, -0.0, 0.0, 0.5, 1.0, 10.0, 127.0]),
                   torch.linspace(-40.0, 40.0, 246)])
    y = torch.cat([torch.tensor([0.0, -0.0, inf, -inf, 1.0, 2.0, -3.0, 0.1, 1e-30, 3e30, -7.5e-20]),
                   torch.logspace(-30, 30, 245)])
    lo = torch.cat([torch.tensor([1.0 + 2**-8, 1.0 + 3 * 2**-8, inf, -inf, 65504.0, 70000.0, 1e-6, -2.5]),
                    torch.randn(248, generator=gen) * 100])
    hi = torch.cat([torch.tensor([-1.0 - 2**-8, 2.0 + 2**-7, -inf, inf, -70000.0, 65520.0, -3e-7, 3.0]),
                    torch.randn(248, generator=gen) * 0.01])
    bits = torch.randint(0, 1 << 16, (2, 256), generator=gen)
    bits[:, :6] = torch.tensor([0x0000, 0x8000, 0x0001, 0x8001, 0x3C00, 0x4049])
    bf16_nan = ((bits[0] & 0x7F80) == 0x7F80) & ((bits[0] & 0x007F) != 0)
    f16_nan = ((bits[1] & 0x7C00) == 0x7C00) & ((bits[1] & 0x03FF) != 0)
    bits[0][bf16_nan] = 0x7F80         # inf: NaN payloads need not survive a conversion
    bits[1][f16_nan] = 0xFC00
    return x.float(), y.float(), lo.float(), hi.float(), bits


@gpu
@requires_hopper
def test_math():
    d = _dev()
    x, y, lo, hi, bits = _math_inputs()
    n = x.numel()
    b16 = (bits - (bits >= 1 << 15) * (1 << 16)).to(torch.int16)   # the same 16-bit patterns, signed
    outs = {k: torch.full((n,), float("nan"), device=d)
            for k in ("ex2", "lg2", "rcp", "ninf", "tof_bf16", "tof_f16")}
    packs = {k: torch.full((n,), -1, dtype=torch.int32, device=d) for k in ("pack_bf16", "pack_f16")}
    shfl = torch.full((5 * n,), float("nan"), device=d)
    _run(MATH, 1, n, x=x.to(d), y=y.to(d), lo=lo.to(d), hi=hi.to(d), bits_bf16=b16[0].contiguous().to(d),
         bits_f16=b16[1].contiguous().to(d), shfl=shfl, **outs, **packs)
    got = {k: v.cpu() for k, v in outs.items()}

    # ex2.approx.ftz: ~2 ulp; results below 2^-126 flush to zero
    ref = torch.exp2(x.double())
    tiny = ref < 2.0**-126
    assert torch.all(got["ex2"][tiny] == 0)
    torch.testing.assert_close(got["ex2"][~tiny].double(), ref[~tiny], rtol=2.0**-20, atol=0)
    # lg2.approx.ftz: ~2^-22 absolute near 1, ~2 ulp elsewhere; log2(0) = -inf, negative -> NaN
    torch.testing.assert_close(got["lg2"].double(), torch.log2(y.double()), rtol=2.0**-20, atol=2.0**-21,
                               equal_nan=True)
    # rcp.rn is IEEE round-to-nearest: bitwise equal to the correctly rounded 1/y
    assert torch.equal(got["rcp"].view(torch.int32), (1.0 / y.double()).float().view(torch.int32))
    assert torch.all(got["ninf"] == float("-inf"))
    # pack: lo in the low 16 bits, hi in the high 16 bits, both round-to-nearest-even
    for key, dtype in (("pack_bf16", torch.bfloat16), ("pack_f16", torch.float16)):
        expected = _u16_bits(lo.to(dtype)) | (_u16_bits(hi.to(dtype)) << 16)
        assert torch.equal(_u32(packs[key]), expected), key
    # to_float is exact
    for key, row, dtype in (("tof_bf16", 0, torch.bfloat16), ("tof_f16", 1, torch.float16)):
        expected = b16[row].contiguous().view(dtype).float()
        assert torch.equal(got[key].view(torch.int32), expected.view(torch.int32)), key
    lanes = torch.arange(n)
    expected_shfl = torch.cat([x[lanes ^ (1 << m)] for m in range(5)])
    assert torch.equal(shfl.cpu(), expected_shfl)


# ---------------------------------------------------------------------------------------------------
# GPU: shared memory, elect, setmaxnreg, named barriers, bulk + global semaphore


@gpu
@requires_hopper
def test_smem_st_ld_stmatrix_and_vectors():
    d = _dev()
    warps, words_per_warp, slots, slot_words = 4, 256, 32, 8
    words = torch.full((warps * words_per_warp,), -1, dtype=torch.int32, device=d)
    vec = torch.full((128 * 2,), float("nan"), device=d)
    _run(SMEM, 1, 128, smem=warps * 1024 + 128 * 16 + SWIZZLE_ALIGN, words=words, vec=vec)

    expected = torch.zeros(warps, words_per_warp, dtype=torch.int64)
    for g in range(warps):
        expected[g] = SMEM_FILL | (g << 8) | torch.arange(words_per_warp)
        for q in range(4):
            for k in range(8):
                slot = (STMATRIX_SLOT_STRIDE * (8 * q + k)) % slots
                for j in range(4):      # word j of the row: columns 2 j (low half) and 2 j + 1
                    code = STMATRIX_CODE | (g << 9) | (q << 6) | (k << 3) | (2 * j)
                    expected[g, slot * slot_words + j] = code | ((code + 1) << 16)
    assert torch.equal(_u32(words).view(warps, words_per_warp), expected)
    partner = (torch.arange(128) ^ 1).float()
    assert torch.equal(vec.cpu().view(128, 2), torch.stack([partner + 0.5, partner + 0.75], dim=1))


@gpu
@requires_hopper
def test_elect_one_lane_per_warp():
    d = _dev()
    out = torch.full((3 * 256,), -1, dtype=torch.int32, device=d)
    _run(ELECT, 1, 256, out=out)
    per_warp = out.cpu().view(3, 8, 32)
    assert torch.all((per_warp == 0) | (per_warp == 1))
    assert torch.equal(per_warp.sum(dim=2), torch.ones(3, 8, dtype=torch.int64))


@gpu
@requires_hopper
def test_setmaxnreg_roles_run():
    d = _dev()
    inp = torch.randn(128, device=d)
    out = torch.full((384,), float("nan"), device=d)
    _run(SETMAXNREG, 1, 384, **{"in": inp, "out": out})
    got = out.cpu().double()
    i = inp.cpu().double()
    t = torch.arange(384)
    assert torch.equal(got[:128], 3.0 * t[:128].double() + 1.0)
    windows = torch.stack([i[k % 64:k % 64 + 64] for k in range(128, 384)])
    torch.testing.assert_close(got[128:], windows @ i[:64], rtol=1e-5, atol=1e-4)


@gpu
@requires_hopper
def test_named_barrier_producer_consumer_rounds():
    d = _dev()
    out = torch.full((2 * 128,), -7, dtype=torch.int32, device=d)
    _run(NAMED_BARRIER, 1, 160, out=out)
    expected = torch.cat([torch.arange(128), 1000 + torch.arange(128)]).to(torch.int32)
    assert torch.equal(out.cpu(), expected)


@gpu
@requires_hopper
def test_bulk_reduce_with_acquire_release_semaphore():
    d = _dev()
    blocks, n = 8, 64
    acc = torch.zeros(n, device=d)
    flag = torch.zeros(1, dtype=torch.int32, device=d)
    seen = torch.full((blocks * 2,), float("nan"), device=d)
    acc4 = torch.zeros(4 * 32, device=d)
    _run(BULK_GMEM, blocks, 32, acc=acc, flag=flag, seen=seen, acc4=acc4)
    j = torch.arange(1, n + 1).double()
    weights = torch.arange(1, blocks + 1).double()
    assert torch.equal(acc.cpu().double(), 0.5 * j * weights.sum())
    before = torch.cumsum(weights, 0) - weights      # sum of (b' + 1) over the blocks that went first
    assert torch.equal(seen.cpu().double().view(blocks, 2), torch.stack([0.5 * before, 0.5 * n * before], 1))
    assert flag.item() == blocks
    assert torch.equal(acc4.cpu().double(), 0.25 * torch.arange(1, 4 * 32 + 1).double() * weights.sum())


@gpu
@requires_hopper
def test_bulk_store_claims_an_unzeroed_accumulator():
    d = _dev()
    blocks, n = 8, 64
    acc = torch.full((n,), float("nan"), device=d)
    word = torch.zeros(1, dtype=torch.int32, device=d)
    tickets = torch.full((blocks,), -1, dtype=torch.int32, device=d)
    _run(BULK_CLAIM, blocks, 32, acc=acc, word=word, tickets=tickets)
    j = torch.arange(1, n + 1).double()
    assert torch.equal(acc.cpu().double(), 0.5 * j * torch.arange(1, blocks + 1).double().sum())
    assert sorted(t & ((1 << 30) - 1) for t in tickets.tolist()) == list(range(blocks))
    assert word.item() == (1 << 30) + blocks
