// Forward kernel parameters: one by-value struct. The host mirror is FWD_PARAMS in
// fa3lite/variants.py; FA3LITE_PARAMS_OK (from the host) asserts the two layouts agree.
#pragma once
#include "../ptx/types.cuh"

namespace fa3lite { namespace attn {

struct FwdParams {
  TmaDesc q;            // (B, Sq, Hq, D) 5-D map, boxes of kBlockM rows x D
  TmaDesc k;            // (B, Sk, Hk, D) boxes of kBlockN rows x D
  TmaDesc v;
  TmaDesc o;            // (B, Sq, Hq, D) boxes of 64 rows x 64 columns (one warpgroup, one column block)
  float* lse;           // (B, Hq, Sq) contiguous, natural log
  i32* tile_sched;      // kDynamicTiles: [0] tiles claimed past the first wave, [1 + cta] that CTA's
                        // hand-off slot; zeroed by the host per launch (scheduler.cuh)
  const float* sink;    // (Hq,) f32 learnable sink logits (natural-log units), or null: softmax.cuh
  i32 seqlen_q;
  i32 seqlen_k;
  i32 num_heads_q;
  i32 head_group;       // Hq / Hk: query heads sharing one K/V head
  i32 num_m_blocks;     // ceil(Sq / kBlockM)
  i32 num_tiles;        // num_m_blocks * Hq * B: the grid strides over them (scheduler.cuh)
  i32 causal_offset;    // key j is visible to query i iff j <= i + causal_offset (kIsCausal) ...
  i32 local_offset;     // ... and j >= i + local_offset (kIsCausal; -2^30 without a window)
  float scale_log2;     // softmax_scale * log2(e): scores go through exp2; softcap * log2(e) with kSoftcap
  float softcap_scale;  // kSoftcap: softmax_scale / softcap, the factor inside the tanh
};

static_assert(sizeof(FwdParams) == FA3LITE_PARAMS_SIZE, "host and device disagree on the FwdParams size");
#ifdef FA3LITE_PARAMS_OK
static_assert(FA3LITE_PARAMS_OK, "host and device disagree on the FwdParams layout");
#endif

}}  // namespace fa3lite::attn
