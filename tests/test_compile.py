"""NVRTC compiles of every kernel variant, checked on the CPU: resources and SASS."""
import dataclasses
import importlib.util
import pathlib

import pytest

from fa3lite.runtime.compile import CompileError, KernelSpec, compile_spec
from fa3lite.runtime import cache
from fa3lite.runtime.inspect import (instructions, kernel_info, log_warnings, longest_chain, mask_run_compares,
                                     mask_select_runs, opcode_counts, overlap_window, sass_text, spec_info,
                                     split_line)
from fa3lite.hopper.combine import all_combine_variants
from fa3lite.variants import (FWD_PARAMS, FWD_TILES, SOFTCAP_MAX_BLOCK_N, SOFTCAP_TILES, FwdTile, FwdVariant,
                              all_fwd_variants, fwd_tile, split_tile, varlen_tile)

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("variant", all_fwd_variants(),
                         ids=lambda v: f"d{v.head_dim}-{v.dtype}-{'causal' if v.causal else 'full'}-n{v.block_n}"
                                       f"{'-p' if v.tile.persistent else ''}{'-softcap' if v.softcap else ''}"
                                       f"{'-varlen' if v.varlen else ''}{f'-v{v.head_dim_v}' if v.head_dim_v != v.head_dim else ''}"
                                       f"{'-sink' if v.sink else ''}{'-split' if v.split else ''}{'-paged' if v.paged else ''}")
def test_fwd_variant_resources_and_sass(variant):
    info = spec_info(variant.spec(), variant.smem_bytes)
    sass = info["sass"]
    assert info["spill_bytes"] == 0, info["ptxas_log"]
    assert info["stack_bytes"] == 0, info["ptxas_log"]
    assert not info["warnings"], info["warnings"]   # NVRTC / ptxas warnings are defects here too
    assert info["smem_bytes"] <= 227 * 1024
    assert sass.get("HGMMA", 0) >= variant.kernel_dim // 16 + variant.block_n // 16
    assert sass.get("UTMALDG", 0) >= 3          # Q, K, V
    if variant.direct_o:
        # no room for sO in a persistent CTA (fixed lengths or varlen): O leaves from registers, a
        # 16-byte store per lane and 8-column chunk after the quad's transpose (4 shuffles per four
        # chunks), never through sQ
        chunks = 2 * variant.head_dim_v // 8    # a thread's chunks: two rows
        assert "UTMASTG" not in sass and sass.get("STG.E.128", 0) >= chunks // 4, sorted(sass)
        assert sass.get("SHFL.BFLY", 0) >= chunks, sorted(sass)
    if variant.varlen:
        # O copied out row by row (never past the sequence's end); the sequence's maps made in place
        assert "UTMASTG" not in sass and sass.get("STG.E.128", 0) >= 1, sorted(sass)
        # a dense varlen kernel is persistent and claims its real tiles from a counter (kVarlenTiles)
        assert variant.tile.persistent != variant.split and (sass.get("ATOMG", 0) >= 1) == variant.tile.persistent
    elif not variant.direct_o:
        assert sass.get("UTMASTG", 0) >= 1      # O through shared memory
    if variant.split:
        # a split's partial O leaves as f32 pairs straight from the accumulator fragment
        assert sass.get("STG.E.64", 0) >= variant.head_dim_v // 8, sorted(sass)
    # the split kernel loads through the packed maps (no map copies to write and fence before its
    # first load: config.cuh kSeqMaps) and lets its combine launch early (griddepcontrol)
    assert ("UTMACCTL.IV" in sass) == (variant.varlen and not variant.split), sorted(sass)
    assert ("PREEXIT" in sass) == variant.split, sorted(sass)
    assert sass.get("USETMAXREG", 0) == 2       # producer dec, consumer inc
    assert "LDL" not in sass and "STL" not in sass, "local memory in the SASS"
    # P goes to the P.V wgmma from registers (RS form), never through shared memory
    assert sass.get("MUFU.EX2", 0) >= variant.block_n // 2
    # softcap: one MUFU.TANH per score of the thread's block_n / 2 (none without)
    assert (sass.get("MUFU.TANH", 0) >= variant.block_n // 2) if variant.softcap else "MUFU.TANH" not in sass
    sass_listing = sass_text(cache.get(variant.spec()).cubin)   # disassembled once for both checks
    ops = instructions(sass_listing)
    if variant.overlap:
        assert_exp2s_under_the_pv_gemm(variant, ops)
    # a boundary block's mask hides a thread's whole S fragment in one straight run of selects, their
    # predicates taken from the visible entries' bits (frag::visible_bits): a few compares a row's
    # bounds, none per entry (a compare per entry and bound: 32 or more in a run)
    ops_guarded = instructions(sass_listing, guards=True)
    runs = mask_select_runs(ops_guarded)
    assert runs and all(r >= variant.block_n // 2 for r in runs), runs
    assert all(compares <= 8 for _, compares in mask_run_compares(ops_guarded)), mask_run_compares(ops_guarded)
    # each row's max over a key block in independent chains (softmax.cuh block_max): one running max
    # a row made a chain as long as the row's block_n / 4 scores (34 FMNMX deep at block_n = 128)
    chain = longest_chain(ops_guarded, "FMNMX")
    assert chain <= variant.block_n // 16 + 6, chain


def test_listing_lines_and_log_warnings_parse():
    assert split_line("        /*0d90*/                   @!P0 BRA 0x3520 ;") == (0xD90, "@!P0", "BRA 0x3520")
    assert split_line("  /*0da0*/  FADD R1, R2, R3 ;   /* 0x0000000302017221 */") == (0xDA0, "", "FADD R1, R2, R3")
    assert split_line(".L_x_3:") is None and split_line("  /* 0x000fe20000000f00 */") is None
    log = ('/src/fwd_epilogue.cuh(226): warning #128-D: loop is not reachable\n'
           'Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"\n'
           'ptxas warning : Value of threads per SM for entry k is out of range\n'
           'ptxas info    : Used 168 registers, 0 bytes spill stores, 0 bytes spill loads\n')
    assert log_warnings(log) == log.splitlines()[::2]


def test_longest_chain_follows_registers_within_a_run():
    serial = ["FMNMX R2, R1, R10, !PT", "FMNMX R3, R2, R11, !PT", "FMNMX R4, R3, R12, !PT"]
    tree = ["FMNMX R2, R1, R10, !PT", "FMNMX R3, R5, R11, !PT", "FMNMX R4, R2, R3, !PT"]
    assert longest_chain(serial, "FMNMX") == 3
    assert longest_chain(tree, "FMNMX") == 2
    # a branch ends the run, another instruction writing a link ends the chain through it
    assert longest_chain(serial[:2] + ["@!P0 BRA 0x100"] + serial[2:], "FMNMX") == 2
    assert longest_chain(serial[:2] + ["MOV R3, R9"] + serial[2:], "FMNMX") == 2
    # a store's first register is its address, a compare writes a predicate: neither ends a chain
    assert longest_chain(serial[:2] + ["STS [R3], R9", "FSETP.GT.AND P0, PT, R3, R9, PT"] + serial[2:], "FMNMX") == 3


def assert_exp2s_under_the_pv_gemm(variant, ops):
    """Overlapped mainloop: every exp2 of a key block's P sits between the loop's wait for S (the wait
    that lets one group, P.V, run on) and the wait for P.V, so MUFU works while P.V runs. ptxas had
    hoisted the P.V wait above all of them (fwd_consumer.cuh wait_pv_rescale_o). ops: the variant's
    instructions (runtime.inspect.instructions)."""
    window = overlap_window(ops)
    between = sum(op.startswith("MUFU.EX2") for op in window)
    assert between >= variant.block_n // 2, (between, variant.block_n)


@pytest.mark.parametrize("variant", all_combine_variants(), ids=lambda v: f"{v.dtype}-v{v.head_dim_v}")
def test_combine_variant_resources_and_sass(variant):
    info = spec_info(variant.spec(), 0)
    sass = info["sass"]
    assert info["spill_bytes"] == 0 and info["stack_bytes"] == 0, info["ptxas_log"]
    assert not info["warnings"], info["warnings"]
    assert "LDL" not in sass and "STL" not in sass, "local memory in the SASS"
    assert sass.get("MUFU.EX2", 0) >= 2 and sass.get("MUFU.LG2", 0) >= 1, sorted(sass)   # weights, the merged LSE
    # a dependent launch: waits for the split kernel (griddepcontrol.wait) before its partial results,
    # then eight splits' O column pairs in flight at a time (combine.cu kUnroll)
    assert sass.get("ACQBULK", 0) == 1, sorted(sass)
    assert sass.get("LDG.E.64", 0) >= 8 * -(-variant.head_dim_v // 64), sorted(sass)


def test_append_kernel_resources_and_sass():
    """The KV-cache append copies 16-byte chunks: vector loads and stores, no local memory."""
    from fa3lite.hopper.append import append_spec

    info = spec_info(append_spec(), 0)
    sass = info["sass"]
    assert info["spill_bytes"] == 0 and info["stack_bytes"] == 0, info["ptxas_log"]
    assert not info["warnings"], info["warnings"]
    assert "LDL" not in sass and "STL" not in sass, "local memory in the SASS"
    assert sass.get("LDG.E.128", 0) >= 2 and sass.get("STG.E.128", 0) >= 2, sorted(sass)   # K's and V's rows


def test_split_variants_cover_every_varlen_kernel():
    variants = all_fwd_variants()
    varlen = {dataclasses.replace(v, split=False, tile=None) for v in variants if v.varlen and not v.split}
    split = {dataclasses.replace(v, split=False, tile=None) for v in variants if v.split and not v.paged}
    assert split == varlen
    # paged K/V: every split variant without a sink (flash_attn_with_kvcache takes none)
    paged = {dataclasses.replace(v, paged=False) for v in variants if v.paged}
    assert paged == {v for v in variants if v.split and not v.paged and not v.sink}
    for v in variants:
        if v.split:
            assert v.tile == split_tile(v.head_dim) and v.block_m == 64 and v.threads == 256
            assert v.smem_bytes <= 227 * 1024


def test_kernel_info_reports_the_default_forward_tile():
    info = kernel_info("fwd", head_dim=64, dtype="bf16", causal=False)
    tile = fwd_tile(64, False)
    assert (info["block_m"], info["block_n"], info["stages"]) == (tile.block_m, tile.block_n, tile.stages)
    assert info["threads"] == 128 * (1 + tile.block_m // 64)


def test_fwd_tile_follows_the_key_length(monkeypatch):
    for (d, causal), entries in FWD_TILES.items():
        assert entries[0][0] == 0, "every (d, causal) has a tile for the shortest sequences"
        assert [m for m, _ in entries] == sorted({m for m, _ in entries})
        for min_k, tile in entries:
            assert fwd_tile(d, causal, min_k) == tile
        assert fwd_tile(d, causal) == entries[0][1]
        assert fwd_tile(d, causal, 1 << 30) == entries[-1][1]
    # softcapped d=64 trades the three-warpgroup tile for one whose registers hold the tanh
    assert fwd_tile(64, True, 0, softcap=True) == SOFTCAP_TILES[64] == FwdVariant(64, "bf16", False, softcap=True).tile
    assert fwd_tile(128, True, 0, softcap=True) == fwd_tile(128, True, 0)
    # and takes key blocks no wider than its registers allow (a 192-key block spills with the tanh)
    for (d, causal), entries in FWD_TILES.items():
        for min_k, _ in entries:
            assert fwd_tile(d, causal, min_k, softcap=True).block_n <= SOFTCAP_MAX_BLOCK_N
    wide = FwdTile(128, 192, 2, True, True)
    monkeypatch.setitem(FWD_TILES, (128, True), ((0, wide),))
    assert fwd_tile(128, True, 0, softcap=True) == wide._replace(block_n=SOFTCAP_MAX_BLOCK_N)
    # the variant carries its tile: a different tile is a different kernel (and cache entry)
    a = FwdVariant(128, "bf16", True, tile=fwd_tile(128, True, 0))
    b = FwdVariant(128, "bf16", True, tile=fwd_tile(128, True, 1 << 20))
    assert (a == b) == (a.tile == b.tile) and (a.spec() == b.spec()) == (a.tile == b.tile)


def test_fwd_grid_one_cta_per_tile_or_one_per_sm():
    from fa3lite.hopper.fwd import fwd_grid

    tile = fwd_tile(128, False)
    pers = FwdVariant(128, "bf16", False, tile=tile._replace(persistent=True))
    single = FwdVariant(128, "bf16", False, tile=tile._replace(persistent=False))
    assert fwd_grid(single, 1000, 132) == 1000
    assert fwd_grid(pers, 1000, 132) == 132
    assert fwd_grid(pers, 100, 132) == 100          # fewer tiles than SMs
    # no room for sO: a persistent fixed-length kernel stores O from registers (kDirectO), so its Q
    # buffer never stages O and a persistent grid takes tiles that see no key as the others do
    wide = FwdVariant(256, "bf16", True, tile=fwd_tile(256, True)._replace(persistent=True))
    assert not wide.separate_o and wide.direct_o
    assert fwd_grid(wide, 1000, 132) == 132
    # the dense varlen kernel too (persistent); the split kernel, one tile per CTA, keeps its stores
    assert FwdVariant(256, "bf16", True, tile=wide.tile, varlen=True).direct_o
    assert not FwdVariant(256, "bf16", True, tile=split_tile(256), varlen=True, split=True).direct_o
    assert not FwdVariant(256, "bf16", True, tile=wide.tile._replace(persistent=False)).direct_o
    assert not pers.direct_o                                                         # it has sO
    # causal persistent kernels claim tiles from a counter (kDynamicTiles); full-mask ones stride
    assert FwdVariant(128, "bf16", True, tile=pers.tile).dynamic_tiles and not pers.dynamic_tiles
    assert not FwdVariant(128, "bf16", True, tile=single.tile).dynamic_tiles


def test_varlen_tiles_follow_the_longest_keys_on_a_persistent_grid():
    # the dense varlen kernel takes fixed lengths' tile for max_seqlen_k, always persistent (its CTAs
    # claim real tiles); the split kernel runs one CTA per tile
    for (d, causal), entries in FWD_TILES.items():
        for min_k, tile in entries:
            assert varlen_tile(d, causal, min_k) == tile._replace(persistent=True)
    assert FwdVariant(64, "bf16", True, varlen=True).tile == varlen_tile(64, True, 0)
    assert varlen_tile(64, True, 4096).block_m == 192 and varlen_tile(64, True, 1024).block_m == 128
    split = FwdVariant(128, "bf16", True, varlen=True, split=True)
    assert not split.tile.persistent and split.dynamic_tiles is False
    assert FwdVariant(128, "bf16", False, varlen=True).dynamic_tiles   # claims even with a full mask


def test_debug_build_compiles_with_bounded_waits():
    v = FwdVariant(128, "bf16", True, debug=True)
    c = compile_spec(v.spec())
    assert "spill stores" in c.log and len(c.cubin) > 0


def test_compile_error_carries_nvrtc_log(tmp_path, monkeypatch):
    src = tmp_path / "src"
    (src / "ptx").mkdir(parents=True)
    (src / "ptx" / "types.cuh").write_text("#pragma once\n")
    (src / "bad.cu").write_text('extern "C" __global__ void k() { this_is_not_defined(); }\n')
    monkeypatch.setenv("FA3LITE_CUDA_SRC", str(src))
    from fa3lite.runtime import sources

    sources.cuda_src_dir.cache_clear()
    sources.fingerprint.cache_clear()
    try:
        with pytest.raises(CompileError) as e:
            compile_spec(KernelSpec("bad.cu", "k"))
        assert "this_is_not_defined" in e.value.log
        assert "this_is_not_defined" in str(e.value)
    finally:
        sources.cuda_src_dir.cache_clear()
        sources.fingerprint.cache_clear()


def test_params_layout_is_asserted_in_the_kernel():
    defines = dict(FwdVariant(64, "bf16", False).spec().defines)
    assert defines["FA3LITE_PARAMS_SIZE"] == str(FWD_PARAMS.size)
    # A wrong size must be a compile error, not a silent misread of the parameters.
    bad = KernelSpec("attention/fwd_kernel.cu", "fa3lite_fwd",
                     tuple((k, str(int(v) + 8) if k == "FA3LITE_PARAMS_SIZE" else v)
                           for k, v in FwdVariant(64, "bf16", False).spec().defines))
    with pytest.raises(CompileError, match="FwdParams"):
        compile_spec(bad)


def test_generated_wgmma_header_is_current():
    spec = importlib.util.spec_from_file_location("gen_wgmma", ROOT / "tools" / "gen_wgmma.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (ROOT / "cuda_src" / "ptx" / "wgmma_ops.cuh").read_text() == gen.render(), \
        "cuda_src/ptx/wgmma_ops.cuh is stale: run python tools/gen_wgmma.py"


def test_kernel_info_rejects_unknown_kind_and_variant():
    with pytest.raises(ValueError, match="kind"):
        kernel_info("sideways")
    with pytest.raises(ValueError, match="head_dim"):
        kernel_info("fwd", head_dim=80)


@pytest.mark.parametrize("kind,head_dim", [("fwd", 64), ("fwd", 128), ("fwd", 256), ("bwd", 64), ("bwd", 128),
                                           ("bwd", 256)])
def test_descriptor_steps_are_64_bit_adds(kind, head_dim):
    """A k-step's wgmma descriptor is its tile's descriptor plus a constant, one 64-bit uniform add
    (UIADD3.64) over the opaque base (cuda_src/ptx/wgmma.cuh desc_sw128_at). Where ptxas saw the
    halves it re-paired them for every wgmma (an add and a UMOV per operand; under 3 UIADD3.64 in
    each of these kernels, over 16 now), and the D = 64 backward's main loop ran 735 instead of 688
    instructions (benchmarks/RESULTS.md section 42)."""
    from fa3lite.hopper import bwd as hopper_bwd

    v = FwdVariant(head_dim, "bf16", True) if kind == "fwd" else hopper_bwd.BwdVariant(head_dim, "bf16", True)
    counts = opcode_counts(sass_text(compile_spec(v.spec()).cubin))
    assert counts["UIADD3.64"] >= counts["HGMMA"] // 4, (counts["UIADD3.64"], counts["HGMMA"])
