"""NVRTC compiles of every backward kernel variant, checked on the CPU: resources and SASS."""
import dataclasses
import pathlib

import pytest
import torch

from fa3lite.hopper import bwd as hopper_bwd
from fa3lite.hopper import common as hopper_common
from fa3lite.runtime.compile import CompileError, KernelSpec, compile_spec
from fa3lite.runtime.inspect import (instructions, kernel_info, log_warnings, mask_select_runs, opcode_counts,
                                     overlap_window, sass_text, spec_info)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(tmp_path / "cache"))


_NEEDS_ID = {(True, True): "dq+dkv", (True, False): "dq", (False, True): "dkv"}


def _id(v):
    return (f"d{v.head_dim}-{v.dtype}-{'causal' if v.causal else 'full'}-{_NEEDS_ID[v.need_dq, v.need_dkv]}"
            f"{'-f32' if v.dkv_f32 else ''}{'-softcap' if v.softcap else ''}{'-varlen' if v.varlen else ''}"
            f"{f'-v{v.head_dim_v}' if v.head_dim_v != v.head_dim else ''}{'-short' if v.short_ring else ''}"
            f"{'-walk' if v.walk_heads else ''}")


def test_all_variants_are_listed():
    variants = hopper_bwd.all_bwd_variants()
    # head dims, dtypes, causal, needs x f32, softcap; varlen: every gradient, f32 or not, softcap; the
    # (192, 128) pair: every gradient, dtypes, causal, f32 or not, fixed or varlen; the two-stage twins
    # of D = 64 causal variants with dQ (dtypes x (needs with dQ x f32: 3, varlen f32 or not: 2, walking
    # fixed and varlen: 2)); the walking twins: D = 96/128 (dtypes, causal, needs with dK/dV, softcap;
    # varlen: dtypes, causal, softcap) and D = 64 without softcap (D = 256 walks in its one variant)
    grouped = 2 * 2 * 2 * 2 * 2 + 2 * 2 * 2 + 2 * 2 * 2 * 2 + 2 * 2
    assert len(variants) == len(set(variants)) == (5 * 2 * 2 * 5 * 2 + 5 * 2 * 2 * 2 * 2 + 2 * 2 * 2 * 2
                                                   + 2 * (3 + 2 + 2) + grouped)
    assert {(v.need_dq, v.need_dkv) for v in variants} == {(True, True), (True, False), (False, True)}
    assert not any(v.dkv_f32 and not v.need_dkv for v in variants)


def test_dq_claims_where_a_tile_sums_over_all_keys():
    # claims (bwd_dq.cuh) need one writer tile over all keys (narrow: dq_regions 1) and no turns
    claims, V = hopper_bwd.dq_claims, hopper_bwd.BwdVariant
    assert claims(V(64, "bf16", False), False) and claims(V(128, "bf16", True, dkv_f32=True), False)
    assert claims(V(96, "fp16", False, varlen=True), False) and claims(V(128, "bf16", False, softcap=True), False)
    assert not claims(V(64, "bf16", False), True)                        # deterministic: turns
    assert not claims(V(64, "bf16", False, softcap=True), False)         # two partial tiles per block
    assert not claims(V(256, "bf16", False), False) and not claims(V(192, "bf16", True), False)   # wide
    assert not claims(V(128, "bf16", False, need_dq=False), False)


def test_first_tiles_stored_where_the_writer_adds():
    # the preprocess leaves the accumulator alone where the main kernel stores first tiles: with
    # claims, or at the first deterministic turn (also with two partial tiles: the first is stored;
    # wide: the turn keeper zeroes its warpgroup's part first)
    first, V = hopper_bwd.stores_first, hopper_bwd.BwdVariant
    assert first(V(64, "bf16", False), False) and first(V(64, "bf16", False), True)
    assert first(V(64, "bf16", True, softcap=True), True) and not first(V(64, "bf16", True, softcap=True), False)
    assert not first(V(256, "bf16", False), False) and first(V(256, "bf16", True), True)      # wide
    assert first(V(192, "bf16", False, need_dkv=False), True)
    assert not first(V(128, "bf16", False, need_dq=False), False)


def test_counter_words_for_turns_and_claims():
    # one word per query block (two per block in the wide layout's turns), padded to 64 words; none
    # without turns or claims
    words, V = hopper_bwd.counter_words, hopper_bwd.BwdVariant
    assert words(V(64, "bf16", False), False, 100) == 128           # claims
    assert words(V(64, "bf16", False), True, 64) == 64              # turns
    assert words(V(256, "bf16", True), True, 40) == 128             # wide turns: two per block
    assert words(V(256, "bf16", False), False, 40) == 0             # wide, no turns: the zeroed accumulator
    assert words(V(128, "bf16", False, need_dq=False), False, 40) == 0


def test_rotated_walk_without_turns_over_few_query_blocks():
    # full masks with 128-query steps walk rotated without turns over few query blocks
    # (bwd_scheduler.cuh), whatever gradients the call computes, so a dK/dV-only call sums in the
    # order of a full one
    walk, V, few = hopper_bwd.rotated_walk, hopper_bwd.BwdVariant, hopper_bwd.ROTATED_WALK_M_BLOCKS
    for needs in ((True, True), (True, False), (False, True)):
        assert walk(V(64, "bf16", False, need_dq=needs[0], need_dkv=needs[1]), False, few)
        assert not walk(V(64, "bf16", False, need_dq=needs[0], need_dkv=needs[1]), False, few + 1)
    assert walk(V(64, "fp16", False, varlen=True, dkv_f32=True), False, 1)
    assert not walk(V(128, "bf16", False), False, 2)                   # 64-query steps: two dQ buffers
    assert not walk(V(64, "bf16", True), False, 2)                     # banded masks: descending starts
    assert not walk(V(64, "bf16", False), True, 2)                     # deterministic: turn_order decides
    assert not walk(V(256, "bf16", False), False, 2) and not walk(V(64, "bf16", False, softcap=True), False, 2)


def test_ring_depth_follows_the_step_and_the_mask():
    # three Q/dO stages only with 128-query steps (D = 64, no softcap) and dQ; banded masks over few
    # query blocks keep two (short_ring), and the flag means nothing where three do not apply
    assert hopper_bwd.BwdVariant(64, "bf16", False).stages == 3
    assert hopper_bwd.BwdVariant(64, "bf16", True, short_ring=True).stages == 2
    assert hopper_bwd.BwdVariant(64, "bf16", False, need_dq=False).stages == 2
    assert hopper_bwd.BwdVariant(64, "bf16", False, softcap=True).stages == 2
    assert hopper_bwd.BwdVariant(128, "bf16", True, short_ring=True) == hopper_bwd.BwdVariant(128, "bf16", True)
    blocks = hopper_bwd.SHORT_RING_M_BLOCKS
    causal, full = hopper_bwd.BwdVariant(64, "bf16", True), hopper_bwd.BwdVariant(64, "bf16", False)
    assert hopper_bwd.for_query_length(causal, blocks * 128).stages == 2
    assert hopper_bwd.for_query_length(causal, blocks * 128 + 1).stages == 3
    assert hopper_bwd.for_query_length(full, 128) == full


@pytest.mark.parametrize("variant", hopper_bwd.all_bwd_variants(), ids=_id)
def test_bwd_variant_resources_and_sass(variant):
    if variant == hopper_bwd.BwdVariant(variant.head_dim, variant.dtype, variant.causal):
        info = kernel_info("bwd", head_dim=variant.head_dim, dtype=variant.dtype, causal=variant.causal)
        assert info["smem_bytes"] == variant.smem_bytes
    else:
        info = spec_info(variant.spec(), variant.smem_bytes)
    sass = info["sass"]
    assert info["spill_bytes"] == 0, info["ptxas_log"]
    assert info["stack_bytes"] == 0, info["ptxas_log"]
    assert not info["warnings"], info["warnings"]
    assert info["smem_bytes"] <= 227 * 1024
    assert "LDL" not in sass and "STL" not in sass, "local memory in the SASS"
    assert sass.get("USETMAXREG", 0) == 2            # producer dec, consumer inc
    assert sass.get("UTMALDG", 0) >= 4               # K, V, Q, dO
    need_dq, need_dkv, wide = variant.need_dq, variant.need_dkv, variant.wide
    red_v4 = sass.get("REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU", 0)
    if wide and need_dq:
        # dQ from registers: vector reductions, one per 4 accumulators (the ordered path issues the same)
        assert red_v4 >= (variant.head_dim // 2) // 8
    else:
        assert red_v4 == 0
    if not wide and need_dq:
        assert sass.get("UBLKRED", 0) >= 1           # dQ tile: one bulk reduce-add per query block
    else:
        assert "UBLKRED" not in sass
    if not need_dq:
        # no dQ accumulator or turn counter is touched (no reductions, no acquire loads); the one
        # strong atomic is a persistent variant's tile ticket (bwd_scheduler.cuh publish_next_tile)
        strong = [op for op in sass if op.startswith(("RED", "UBLKRED")) or "STRONG" in op]
        ticket = ["ATOMG.E.ADD.S32.STRONG.GPU"] if variant.persistent else []
        assert strong == ticket and all(sass[op] == 1 for op in strong), sorted(sass)
    if not need_dkv:
        # dK/dV are the only plain global stores but the wide turn keeper's zeros (16-byte stores) in
        # a query block's part at the first deterministic turn (narrow: bulk copies of first tiles)
        stores = {op for op in sass if op.startswith("STG")}
        assert stores == ({"STG", "STG.E.128"} if wide else set()), sorted(sass)
    elif not variant.dkv_f32 and not variant.varlen:
        # 16-bit dK/dV leave through the staged tiles in whole-row 16-byte stores (bwd_epilogue.cuh)
        assert {op for op in sass if op.startswith("STG.")} == {"STG.E.128"}, sorted(sass)
    # First dQ tiles are stored with bulk copies (bwd_dq.cuh): each writer's loop with claims (narrow
    # tiles over all keys: a ticket per block, a copy per consumer warpgroup's part) and its loop with
    # turns (a copy per part over all keys, else of the first partial tile). One more ticket in a
    # persistent variant: the producer's, for the CTA's next tile (bwd_scheduler.cuh publish_next_tile).
    claimable = variant.dq_regions == 1
    ticket = 1 if variant.persistent else 0
    assert sass.get("ATOMG", 0) == (variant.dq_buffers if claimable else 0) + ticket
    assert sass.get("UBLKCP.G.S", 0) == variant.dq_buffers * (4 if claimable else 1)
    # GPU-scope fences: the release that passes a deterministic dQ turn on (each dQ writer's, one
    # copy per buffer, or wide the turn keeper's: no consumer thread fences its writes), the release
    # of a claimed block's stored flag (each writer's); varlen, none for the sequences' tensor maps
    # (the preprocess publishes them)
    assert "MEMBAR.SC.GPU" not in sass
    releases = (1 if wide else variant.dq_buffers * (1 + int(claimable))) if need_dq else 0
    assert sass.get("MEMBAR.ALL.GPU", 0) == releases
    # S^T and dP^T (D/16 k-steps each), dV and dK (kBlockM/16 each), dQ (the keys one warpgroup sums)
    d, m, n = variant.kernel_dim, variant.block_m, variant.block_n
    dq_steps = n // 16 if d >= 128 or m == 128 else n // 32   # all keys, or a partial over its own
    hgmma = 2 * (d // 16) + (2 * (m // 16) if need_dkv else 0) + (dq_steps if need_dq else 0)
    assert sass.get("HGMMA", 0) == hgmma
    # stmatrix, one x4 per 16 query columns of a warpgroup's tile: dS^T goes to smem for dQ (and in
    # the wide layout for dK: narrow dK reads it from registers), P^T only wide, for dV
    wg_queries = m // 2 if wide else m
    tiles = int(need_dq or wide) + int(wide and need_dkv)
    assert sass.get("STSM", 0) == tiles * wg_queries // 16
    assert sass.get("MUFU.EX2", 0) >= (m // 4 if wide else m // 2)
    # softcap recomputes one tanh per score of the thread (none without)
    tanh = sass.get("MUFU.TANH", 0)
    assert tanh >= (m // 4 if wide else m // 2) if variant.softcap else tanh == 0


@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
def test_partial_variants_shrink_shared_memory(head_dim):
    def smem(need_dq, need_dkv):
        return hopper_bwd.BwdVariant(head_dim, "bf16", False, need_dq=need_dq, need_dkv=need_dkv).smem_bytes
    full = smem(True, True)
    if head_dim <= 128:
        assert smem(False, True) < full   # no dS^T tiles, no dQ tile(s)
        assert smem(True, False) == full  # dQ needs all of them; dK/dV had none of their own
    else:
        assert smem(True, False) < full   # no P^T tiles
        assert smem(False, True) == full  # dK needs sdS like dQ


def test_need_flags_are_checked():
    with pytest.raises(ValueError, match="need_dq or need_dkv"):
        hopper_bwd.BwdVariant(128, "bf16", False, need_dq=False, need_dkv=False)
    with pytest.raises(ValueError, match="dkv_f32"):
        hopper_bwd.BwdVariant(128, "bf16", False, dkv_f32=True, need_dkv=False)
    t = torch.zeros(1, 4, 1, 64)
    with pytest.raises(ValueError, match="need_dq or need_dkv"):
        hopper_bwd.backward(t, t, t, t, t, torch.zeros(1, 1, 4), 0.1, False, 0, need_dq=False, need_dkv=False)


@pytest.mark.parametrize("needs", list(_NEEDS_ID), ids=list(_NEEDS_ID.values()))
def test_empty_problem_returns_only_the_needed_gradients(needs):
    need_dq, need_dkv = needs
    q, k = torch.randn(2, 0, 4, 64), torch.randn(2, 5, 2, 64)
    dq, dk, dv = hopper_bwd.backward(q, q, k, k, q, torch.zeros(2, 4, 0), 0.1, True, 0,
                                     need_dq=need_dq, need_dkv=need_dkv)
    assert (dq is not None) == need_dq and (dk is not None) == (dv is not None) == need_dkv
    for g, t in ((dq, q), (dk, k), (dv, k)):
        if g is not None:
            assert g.shape == t.shape and not g.any()


def test_need_flags_are_compile_time_defines():
    spec = hopper_bwd.BwdVariant(64, "bf16", False).spec()
    neither = KernelSpec(spec.source, spec.name, tuple(
        (k, "0" if k in ("FA3LITE_NEED_DQ", "FA3LITE_NEED_DKV") else v) for k, v in spec.defines))
    with pytest.raises(CompileError, match="dQ, dK/dV or both"):
        compile_spec(neither)
    missing = KernelSpec(spec.source, spec.name, tuple((k, v) for k, v in spec.defines if k != "FA3LITE_NEED_DQ"))
    with pytest.raises(CompileError):
        compile_spec(missing)


@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
def test_aux_kernels_compile_without_spills(head_dim):
    v = hopper_bwd.BwdVariant(head_dim, "bf16", False)
    for spec in (v.preprocess_spec(), v.postprocess_spec()):
        c = compile_spec(spec)
        assert "0 bytes spill stores, 0 bytes spill loads" in c.log, c.log
        assert not log_warnings(c.log), c.log
        ops = opcode_counts(sass_text(c.cubin))
        assert "LDL" not in ops
        if spec == v.preprocess_spec():
            # varlen: the sequences' tensor maps, rewritten in place and released to the tensormap
            # proxy once (write_seq_maps)
            assert ops.get("MEMBAR.ALL.GPU", 0) == 1, sorted(ops)
    # the postprocess writes dq rows in 16-byte stores only (whole sectors; bwd_postprocess.cu)
    stores = {op for op in ops if op.startswith("STG.")}
    assert stores == {"STG.E.128"}, stores


@pytest.mark.parametrize("needs", list(_NEEDS_ID), ids=list(_NEEDS_ID.values()))
@pytest.mark.parametrize("head_dim", [128, 256])
def test_debug_build_compiles(head_dim, needs):
    v = hopper_bwd.BwdVariant(head_dim, "bf16", True, need_dq=needs[0], need_dkv=needs[1])
    c = compile_spec(dataclasses.replace(v, debug=True).spec())
    assert len(c.cubin) > 0


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [96, 128])
def test_early_dv_keeps_the_exp2s_under_the_dp_wgmma(head_dim, causal):
    """64-query steps (kEarlyDv): every exp2 of P^T sits between the wait for S^T and the next wgmma
    wait (the one for dP^T, after dV's issue), so MUFU works while the dP^T wgmma runs. Before the
    change ptxas put 31 of 32 after that wait; this keeps it from sliding back unnoticed."""
    v = hopper_bwd.BwdVariant(head_dim, "bf16", causal)
    assert v.block_m == 64
    # from the loop's first wait (S^T done) to the next one (dP^T)
    window = overlap_window(instructions(sass_text(compile_spec(v.spec()).cubin)))
    between = sum(op.startswith("MUFU.EX2") for op in window)
    assert between >= v.block_m // 2, (between, window)
    assert any(op.startswith("HGMMA") for op in window)   # dV's wgmmas issue there
    # dV's k-steps go out with their exp2s (exp2_step): the first before the last exp2, so the tensor
    # pipe has dV work while MUFU finishes P^T (all four after the exp2s before commit e92e987)
    first_dv = next(i for i, op in enumerate(window) if op.startswith("HGMMA"))
    last_ex2 = max(i for i, op in enumerate(window) if op.startswith("MUFU.EX2"))
    assert first_dv < last_ex2, window


@pytest.mark.parametrize("softcap", [False, True], ids=["plain", "softcap"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_masked_block_is_branch_free(head_dim, causal, softcap):
    """The mask of a boundary block hides a thread's whole S^T fragment in one straight run of
    selects. Written as a short-circuit test per entry it compiled into divergent branches around
    each select, and a masked block cost as much as two unmasked ones (RESULTS 25)."""
    v = hopper_bwd.BwdVariant(head_dim, "bf16", causal, softcap=softcap)
    entries = v.block_m // 4 if v.wide else v.block_m // 2
    runs = mask_select_runs(instructions(sass_text(compile_spec(v.spec()).cubin), guards=True))
    assert runs and all(r >= entries for r in runs), runs


@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_row_statistics_loads_share_an_address_register(head_dim):
    """A stage's LSE / dPsum loads are one address register plus an offset in each load (LDS
    [R+imm]; bwd_softmax.cuh load_row_stats over compiler::opaque). Where the compiler saw that the
    adds touched no set bits it made them ORs, which ptxas does not fold: one register and one LOP3
    per load, 32 of each in the D = 64 backward (main loop 688 instead of 655 instructions;
    benchmarks/RESULTS.md section 43)."""
    v = hopper_bwd.BwdVariant(head_dim, "bf16", False)
    loads = [op for op in instructions(sass_text(compile_spec(v.spec()).cubin)) if op.startswith("LDS.64 ")]
    bases = {op.split("[", 1)[1].split("+", 1)[0].rstrip("]") for op in loads}
    assert len(loads) == v.block_m // (8 if v.wide else 4) and len(bases) <= 2, loads   # LSE and dPsum


def test_params_and_smem_layout_are_asserted_in_the_kernel():
    spec = hopper_bwd.BwdVariant(64, "fp16", True).spec()
    for name in ("FA3LITE_PARAMS_SIZE", "FA3LITE_SMEM_BYTES"):
        bad = KernelSpec(spec.source, spec.name,
                         tuple((k, str(int(v) + 8) if k == name else v) for k, v in spec.defines))
        with pytest.raises(CompileError, match="disagree"):
            compile_spec(bad)


def test_unsupported_head_dim_is_a_clear_error():
    with pytest.raises(ValueError, match="head_dim"):
        hopper_bwd.BwdVariant(80, "bf16", False)


@pytest.mark.parametrize("seqlen,head_dim,heads,expected", [
    (1024, 64, 512, 32),      # 512 KB of Q, dO and dQ rows a head: 25 MB (half of L2) holds 50 -> 32
    (1024, 128, 256, 16),     # 1 MB a head
    (16384, 128, 16, 1),      # 16 MB a head: one at a time
    (1024, 64, 4, 4),         # never more than there are heads
])
def test_lpt_heads_fit_half_of_l2(monkeypatch, seqlen, head_dim, heads, expected):
    """The causal launch order's head groups (bwd_scheduler.cuh): a power of two, their Q, dO and f32
    dQ rows within half of L2, at most the number of heads."""
    monkeypatch.setattr(hopper_common, "l2_bytes", lambda device: 50 * 2**20)
    q = torch.empty(1, seqlen, 1, head_dim, dtype=torch.bfloat16, device="meta")
    got = hopper_bwd.lpt_heads(q, q, heads)
    assert got == expected
    assert got & (got - 1) == 0
    # the varlen plan sizes the groups from the longest sequence's rows alone
    assert hopper_bwd.lpt_pairs(seqlen, head_dim, head_dim, 2, heads, "meta") == expected


@pytest.mark.parametrize("bytes_per_head, heads, expected", [
    (4 * 2**20, 32, 4),       # the forward's d=64 16k: K and V, 4 MB a head
    (8 * 2**20, 16, 2),       # d=128 16k
    (256 * 2**10, 512, 64),   # d=64 1k: 100 fit, the power of two below
    (30 * 2**20, 8, 1),       # more than half of L2 a head: one at a time
    (1, 3, 3),                # never more than there are heads
])
def test_lpt_group_is_a_power_of_two_within_half_of_l2(monkeypatch, bytes_per_head, heads, expected):
    """hopper.common.lpt_group, the group size of both schedulers' longest-first order
    (launch_order.cuh): the largest power of two whose rows fit half of L2, or all `heads` if fewer."""
    monkeypatch.setattr(hopper_common, "l2_bytes", lambda device: 50 * 2**20)
    assert hopper_common.lpt_group(bytes_per_head, heads, "meta") == expected


@pytest.mark.parametrize("deterministic,rotatable,n_blocks,expected", [
    (False, True, 8, 0),                             # off
    (True, False, 8, 1),                             # a band (or D = 64 softcap): key-block order
    (True, True, 66, hopper_bwd.ROTATED_TURNS),      # full mask, a sequence's key blocks on half the SMs
    (True, True, 67, 1),                             # more: ascending (blocks wait only for earlier ones)
])
def test_turn_order_rotates_only_where_the_key_blocks_fit(monkeypatch, deterministic, rotatable, n_blocks, expected):
    """BwdParams.deterministic (bwd_scheduler.cuh): the rotated full-mask order lets a key block wait
    for blocks launched after it, so it is chosen only when a sequence's key blocks fit on half of
    the 132 SMs together, and only for variants built to rotate."""
    monkeypatch.setattr(hopper_bwd, "sm_count", lambda device: 132)
    assert hopper_bwd.turn_order(deterministic, rotatable, n_blocks, 0) == expected


@pytest.mark.parametrize("deterministic, persistent, tiles, cap, expected", [
    (False, True, 4096, None, 132),    # persistent: one CTA per SM walks ~31 tiles
    (False, True, 100, None, 100),     # fewer tiles than SMs: one CTA each
    (False, False, 4096, None, 4096),  # the other variants take one tile per CTA ...
    (False, False, 4096, "3", 4096),   # ... whatever the cap
    (True, True, 4096, None, 4096),    # turns: one CTA per tile, whatever the cap
    (True, True, 4096, "3", 4096),
    (False, True, 4096, "3", 3),       # the tests' cap
    (False, True, 2, "3", 2),
])
def test_main_ctas_persistent_without_turns(monkeypatch, deterministic, persistent, tiles, cap, expected):
    """The main kernel's grid (bwd.py main_ctas): persistent CTAs for persistent variants without
    deterministic turns, one CTA per tile otherwise; FA3LITE_BWD_MAX_CTAS lowers the persistent grid
    only (a variant that takes one tile per CTA would leave tiles out)."""
    monkeypatch.setattr(hopper_bwd, "sm_count", lambda device: 132)
    if cap is None:
        monkeypatch.delenv("FA3LITE_BWD_MAX_CTAS", raising=False)
    else:
        monkeypatch.setenv("FA3LITE_BWD_MAX_CTAS", cap)
    assert hopper_bwd.main_ctas(deterministic, tiles, 0, persistent) == expected


@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
@pytest.mark.parametrize("varlen", [False, True])
@pytest.mark.parametrize("causal, dkv_f32, softcap", [(False, False, False), (True, False, False),
                                                      (True, True, False), (True, False, True),
                                                      (False, False, True)])
def test_persistent_variants(head_dim, varlen, causal, dkv_f32, softcap):
    """BwdVariant.persistent -- D = 64, but not varlen with f32 dK/dV or causal softcap -- and the macro
    that makes the kernel's kPersistent from it."""
    v = hopper_bwd.BwdVariant(head_dim, "bf16", causal, dkv_f32, varlen=varlen, softcap=softcap)
    spills_walking = varlen and (dkv_f32 or (causal and softcap))
    assert v.persistent is (v.kernel_dim == 64 and not spills_walking)
    assert ("FA3LITE_BWD_PERSISTENT", "1" if v.persistent else "0") in v.spec().defines


@pytest.mark.parametrize("cap", ["0", "-2", "two", "1.5"])
def test_main_ctas_cap_must_be_a_positive_integer(monkeypatch, cap):
    monkeypatch.setattr(hopper_bwd, "sm_count", lambda device: 132)
    monkeypatch.setenv("FA3LITE_BWD_MAX_CTAS", cap)
    with pytest.raises(ValueError, match="FA3LITE_BWD_MAX_CTAS must be a positive integer"):
        hopper_bwd.main_ctas(False, 4096, 0, True)


def test_rotatable_turns_mirror_the_kernel():
    v = hopper_bwd.BwdVariant
    assert v(128, "bf16", False).rotatable_turns and not v(128, "bf16", True).rotatable_turns
    assert not v(64, "bf16", False, softcap=True).rotatable_turns and v(128, "bf16", False, softcap=True).rotatable_turns
    # the same order whatever gradients a variant computes (dQ alone equals dQ beside dK/dV bit for bit)
    assert v(128, "bf16", False, need_dkv=False).rotatable_turns
    assert not v(64, "bf16", False, softcap=True, need_dkv=False).rotatable_turns
    assert ("kRotatableTurns = !kIsCausal && !(kSoftcap && kHeadDim == 64)"
            in (pathlib.Path(__file__).parent.parent / "cuda_src/attention/bwd_config.cuh").read_text())


def test_grouped_heads_where_the_grid_stays_large(monkeypatch):
    """bwd.py grouped_heads: a GQA backward sums each group in one CTA only where that leaves at
    least GROUPED_MIN_CTAS_PER_SM CTAs an SM (fewer, G-times longer CTAs would leave SMs idle)."""
    monkeypatch.setattr(hopper_bwd, "sm_count", lambda device: 132)
    floor = hopper_bwd.GROUPED_MIN_CTAS_PER_SM * 132
    assert hopper_bwd.grouped_heads(floor, 0)
    assert not hopper_bwd.grouped_heads(floor - 1, 0)
    # d=128, 16k tokens at S=1k, Hk=2: 8 key blocks x 2 x 16 = 256 CTAs, under two an SM
    assert not hopper_bwd.grouped_heads(8 * 2 * 16, 0)
    assert hopper_bwd.grouped_heads(8 * 4 * 16, 0)


def test_grouped_heads_variants():
    """BwdVariant.groupable_heads mirrors kWalkHeads' static_assert: 16-bit dK/dV, not D = 64 with
    softcap, not padded in 256 (192, nor 192 beside V's 128); a grouped variant is its own kernel."""
    V = hopper_bwd.BwdVariant
    assert V(128, "bf16", True).groupable_heads and V(96, "bf16", False).groupable_heads
    assert V(256, "fp16", True, softcap=True).groupable_heads and V(64, "bf16", False).groupable_heads
    assert not V(64, "bf16", False, softcap=True).groupable_heads and not V(192, "bf16", True).groupable_heads
    assert not V(192, "bf16", True, head_dim_v=128).groupable_heads
    assert not V(128, "bf16", True, dkv_f32=True).groupable_heads
    assert not V(128, "bf16", True, need_dkv=False).groupable_heads
    with pytest.raises(ValueError, match="walk_heads"):
        V(64, "bf16", False, softcap=True, walk_heads=True)
    walking = V(128, "bf16", True, walk_heads=True)
    assert ("FA3LITE_WALK_HEADS", "1") in walking.spec().defines
    assert ("FA3LITE_WALK_HEADS", "0") in V(128, "bf16", True).spec().defines
    # unpadded D = 256 walks always (its MHA backward ran faster so), D = 192 (padded) never
    assert V(256, "bf16", False).walks_heads and ("FA3LITE_WALK_HEADS", "1") in V(256, "bf16", False).spec().defines
    assert not V(256, "bf16", False, dkv_f32=True).walks_heads and not V(256, "bf16", False, need_dkv=False).walks_heads
    assert not V(192, "bf16", False).walks_heads
    variants = hopper_bwd.all_bwd_variants()
    assert {dataclasses.replace(v, walk_heads=False) for v in variants if v.walk_heads} == {
        v for v in variants if v.groupable_heads and not v.walks_heads}


def test_head_walk(monkeypatch):
    """bwd.head_walk: MHA and dq-only variants walk one head; GQA walks the group where the variant
    allows it and the grid stays large, else writes f32 dK/dV per query head."""
    monkeypatch.setattr(hopper_bwd, "sm_count", lambda device: 132)
    V = hopper_bwd.BwdVariant
    v128 = V(128, "bf16", True)
    assert hopper_bwd.head_walk(v128, 16, 16, 4, 32, 0) == (v128, 1)
    v256 = V(256, "bf16", False)                                                 # walks one head (MHA)
    assert hopper_bwd.head_walk(v256, 8, 8, 4, 32, 0) == (v256, 1) and v256.walks_heads
    assert hopper_bwd.head_walk(V(128, "bf16", True, need_dkv=False), 16, 4, 4, 32, 0)[1] == 1
    assert hopper_bwd.head_walk(v128, 16, 4, 4, 32, 0) == (dataclasses.replace(v128, walk_heads=True), 4)
    small, heads = hopper_bwd.head_walk(v128, 16, 2, 16, 8, 0)                       # 256 CTAs
    assert heads == 1 and small.dkv_f32
    small, heads = hopper_bwd.head_walk(v256, 8, 2, 2, 16, 0)    # D = 256 walks but for its f32 form
    assert heads == 1 and small.dkv_f32 and not small.walks_heads
    narrow, heads = hopper_bwd.head_walk(V(64, "bf16", False), 32, 8, 4, 32, 0)
    assert heads == 4 and narrow.walk_heads
    capped, heads = hopper_bwd.head_walk(V(64, "bf16", False, softcap=True), 32, 8, 4, 32, 0)   # not groupable
    assert heads == 1 and capped.dkv_f32 and not capped.walk_heads
