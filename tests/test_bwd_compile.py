"""NVRTC compiles of every backward kernel variant, checked on the CPU: resources and SASS."""
import dataclasses

import pytest

from fa3lite import hopper_bwd
from fa3lite.runtime.compile import CompileError, KernelSpec, compile_spec
from fa3lite.runtime.inspect import kernel_info, opcode_counts, sass_text, spec_info


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FA3LITE_CACHE_DIR", str(tmp_path / "cache"))


def _id(v):
    return f"d{v.head_dim}-{v.dtype}-{'causal' if v.causal else 'full'}-{'f32dkv' if v.dkv_f32 else 'dkv'}"


@pytest.mark.parametrize("variant", hopper_bwd.all_bwd_variants(), ids=_id)
def test_bwd_variant_resources_and_sass(variant):
    if variant.dkv_f32:
        info = spec_info(variant.spec(), variant.smem_bytes)
    else:
        info = kernel_info("bwd", head_dim=variant.head_dim, dtype=variant.dtype, causal=variant.causal)
    sass = info["sass"]
    assert info["spill_bytes"] == 0, info["ptxas_log"]
    assert info["stack_bytes"] == 0, info["ptxas_log"]
    assert info["smem_bytes"] <= 227 * 1024
    assert "LDL" not in sass and "STL" not in sass, "local memory in the SASS"
    assert sass.get("USETMAXREG", 0) == 2            # producer dec, consumer inc
    assert sass.get("UTMALDG", 0) >= 4               # K, V, Q, dO
    if variant.wide:
        # dQ from registers: vector reductions (one per 4 accumulators, ordered and unordered paths)
        assert sass.get("REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU", 0) >= 2 * (variant.head_dim // 2) // 8
        assert "UBLKRED" not in sass
    else:
        assert sass.get("UBLKRED", 0) >= 1           # dQ tile: one bulk reduce-add per query block
    # S^T and dP^T (D/16 k-steps each), dV and dK (kBlockM/16 each), dQ (the keys one warpgroup sums)
    d, m, n = variant.head_dim, hopper_bwd.BLOCK_M, variant.block_n
    dq_steps = n // 16 if d >= 128 else n // 32
    assert sass.get("HGMMA", 0) == 2 * (d // 16) + 2 * (m // 16) + dq_steps
    assert sass.get("STSM", 0) == m // 16         # dS^T (wide: P^T and dS^T halves) to smem
    assert sass.get("MUFU.EX2", 0) >= (m // 4 if variant.wide else m // 2)


@pytest.mark.parametrize("head_dim", hopper_bwd.HEAD_DIMS)
def test_aux_kernels_compile_without_spills(head_dim):
    v = hopper_bwd.BwdVariant(head_dim, "bf16", False)
    for spec in (v.preprocess_spec(), v.postprocess_spec()):
        c = compile_spec(spec)
        assert "0 bytes spill stores, 0 bytes spill loads" in c.log, c.log
        assert "LDL" not in opcode_counts(sass_text(c.cubin))


def test_debug_build_compiles():
    c = compile_spec(dataclasses.replace(hopper_bwd.BwdVariant(128, "bf16", True), debug=True).spec())
    assert len(c.cubin) > 0


def test_params_and_smem_layout_are_asserted_in_the_kernel():
    spec = hopper_bwd.BwdVariant(64, "fp16", True).spec()
    for name in ("FA3LITE_PARAMS_SIZE", "FA3LITE_SMEM_BYTES"):
        bad = KernelSpec(spec.source, spec.name,
                         tuple((k, str(int(v) + 8) if k == name else v) for k, v in spec.defines))
        with pytest.raises(CompileError, match="disagree"):
            compile_spec(bad)


def test_unsupported_head_dim_is_a_clear_error():
    with pytest.raises(ValueError, match="head_dim"):
        hopper_bwd.BwdVariant(96, "bf16", False)
