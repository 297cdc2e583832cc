// Backward kernel parameters: one by-value struct. The host mirror is BWD_PARAMS in
// fa3lite/hopper/bwd.py; FA3LITE_PARAMS_SIZE / FA3LITE_PARAMS_OK (from the host) assert the layouts agree.
#pragma once
#include "../ptx/types.cuh"

namespace fa3lite { namespace attn { namespace bwd {

struct BwdParams {
  TmaDesc q;              // (B, Sq, Hq, D) 5-D map, boxes of kBlockM rows x D
  TmaDesc k;              // (B, Sk, Hk, D) boxes of kBlockN rows x D
  TmaDesc v;
  TmaDesc dout;           // like q
  const float* lse_log2;  // (B, Hq, num_m_blocks * kBlockM): LSE * log2(e); +inf for masked/padded rows
  const float* dpsum;     // same shape: rowsum(dO * O); 0 for padded rows
  float* dq_accum;        // (B, Hq, num_m_blocks, kBlockM * D) f32, fragment order (bwd_dq.cuh); zeroed
                          // unless the narrow layout stores first tiles (claims or the first turn)
  i32* dq_sem;            // (B, Hq, num_m_blocks, kSemsPerBlock), zeroed: deterministic-mode turn counters,
                          // or with dq_claims each query block's claim word
  void* dk;               // (B, Sk, Hk, D) contiguous Element, or (B, Sk, Hq, D) f32 when kDkvF32 (GQA: per
                          // query head, summed by the host); kVarlen (total_k, ..., D)
  void* dv;
  i32* tile_counter;      // zeroed by the preprocess: hands out the tiles after each CTA's first
                          // (bwd_scheduler.cuh)
  // kVarlen (as in the forward's params.cuh): packed sequences and the maps of each sequence (the
  // q, k, v, dout maps above are unused)
  const i32* cu_seqlens_q;   // (B + 1,)
  const i32* cu_seqlens_k;
  const i32* seqused_q;      // (B,) or null
  const i32* seqused_k;
  const TmaDesc* seq_maps;   // (B, 4): q, k, v, dout maps of each sequence, built by the preprocess
  i32 seqlen_q;
  i32 seqlen_k;
  i32 num_heads_q;
  i32 head_group;         // Hq / Hk
  i32 cta_heads;          // query heads one CTA walks: 1, or (GQA, !kDkvF32) the whole group of its K/V head,
                          // whose dK/dV it then sums in registers (bwd_scheduler.cuh)
  i32 num_m_blocks;       // ceil(Sq / kBlockM) (kVarlen: of max_seqlen_q; statistics are padded to it)
  i32 num_n_blocks;       // ceil(Sk / kBlockN) (kVarlen: of max_seqlen_k)
  i32 causal_offset;      // key j is visible to query i iff j <= i + causal_offset (kIsCausal) ...
  i32 local_offset;       // ... and j >= i + local_offset (kIsCausal; -2^30 without a window);
                          // kVarlen: both relative to each sequence's diagonal j = i + Sk - Sq
  i32 deterministic;      // nonzero: dQ contributions are added in key-block order
  i32 lpt_heads;          // > 0: key blocks launched longest first in groups of this many heads (bwd_scheduler.cuh)
  i32 dq_claims;          // nonzero: the first dQ tile of each query block is stored, not added (bwd_dq.cuh)
  i32 rotated_walk;       // nonzero, not deterministic: a full mask's key blocks walk the query blocks
                          // from their own on (bwd_scheduler.cuh)
  i32 num_tiles;          // tiles (key block, head pair, batch); the grid has one CTA per tile, or fewer
                          // that take more from tile_counter (bwd_scheduler.cuh)
  float scale_log2;       // softmax_scale * log2(e); softcap * log2(e) with kSoftcap
  float softmax_scale;
  float softcap_scale;    // kSoftcap: softmax_scale / softcap, the factor inside the tanh
};

static_assert(sizeof(BwdParams) == FA3LITE_PARAMS_SIZE, "host and device disagree on the BwdParams size");
#ifdef FA3LITE_PARAMS_OK
static_assert(FA3LITE_PARAMS_OK, "host and device disagree on the BwdParams layout");
#endif

}}}  // namespace fa3lite::attn::bwd
