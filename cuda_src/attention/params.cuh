// Forward kernel parameters: one by-value struct. The host mirror is FWD_PARAMS in
// fa3lite/variants.py; FA3LITE_PARAMS_OK (from the host) asserts the two layouts agree.
#pragma once
#include "../ptx/types.cuh"

namespace fa3lite { namespace attn {

struct FwdParams {
  TmaDesc q;            // (B, Sq, Hq, D) 5-D map, boxes of kBlockM rows x D (kSplit: row groups, tile_io.cuh)
  TmaDesc k;            // (B, Sk, Hk, D) boxes of kBlockN rows x D
  TmaDesc v;
  TmaDesc o;            // (B, Sq, Hq, D) boxes of 64 rows x 64 columns (one warpgroup, one column block)
  float* lse;           // (B, Hq, Sq) contiguous, natural log; null: not stored (the caller keeps none)
  i32* tile_sched;      // kDynamicTiles: [0] tiles claimed past the first wave, [1 + cta] that CTA's
                        // hand-off slot; zeroed by the host per launch (scheduler.cuh)
  const float* sink;    // kSink: (Hq,) f32 learnable sink logits (natural-log units): softmax.cuh
  char* o_base;         // O's address: kVarlen's packed (total_q, Hq, Dv) rows, and config.cuh kDirectO's
                        // (B, Sq, Hq, Dv) rows; both through o_row_bytes / o_head_bytes
  // kVarlen: sequences packed along the rows of (total, H, D) tensors, which q, k, v map as one batch.
  // Sequence b owns rows [cu_seqlens[b], cu_seqlens[b + 1]) and uses the first seqused[b] of them
  // (all without seqused). Each CTA loads through maps of its own sequence (scheduler.cuh; not kSeqMaps:
  // the packed maps at the sequence's rows).
  const i32* cu_seqlens_q;   // (B + 1,)
  const i32* cu_seqlens_k;
  const i32* seqused_q;      // (B,) or null
  const i32* seqused_k;
  const char* q_base;        // the packed tensors' addresses
  const char* k_base;
  const char* v_base;
  TmaDesc* seq_maps;         // q, k, v maps of each CTA's sequence (3 per CTA, written by the CTA;
                             // config.cuh kSeqMaps: not the split kernel)
  // kSplit with num_splits > 1: per split, O normalised over the split's keys and the split's LSE
  // (natural log), merged by combine.cu; rows of no sequence are never written.
  float* o_accum;            // (num_splits, total_q, Hq, Dv) f32
  float* lse_accum;          // (num_splits, Hq, total_q) f32
  // kPaged: K and V map the page pool as rows (num_pages * page_size, Hk, D), boxes of page_rows rows
  // (a divisor of both page_size and kBlockN); cu_seqlens_k is all zeros (rows are logical).
  const i32* page_table;     // (B, pages_per_seq) int32
  i64 q_row_bytes;           // row strides of the packed tensors
  i64 k_row_bytes;
  i64 v_row_bytes;
  // kVarlen: where O's and LSE's rows go. The dense kernel: packed row r of head h at r * o_row_bytes +
  // h * o_head_bytes in O and h * lse_head_stride + r in LSE (contiguous (total_q, Hq, Dv) and (Hq, total_q)).
  // kDirectO, fixed lengths: row r of batch b, head h at (b * seqlen_q + r) * o_row_bytes + h * o_head_bytes;
  // with kVarlen the packed rows above.
  // kSplit: rows come in groups of row_group (a decode step's query heads of one position, read and
  // written in the step's own layout: fa3lite/hopper/varlen.py), row r being member r % row_group of
  // group r / row_group; O at group * o_row_bytes + member * o_member_bytes + h * o_head_bytes, LSE at
  // group * lse_row_stride + member * lse_member_stride + h * lse_head_stride (fwd_epilogue.cuh o_offset, lse_offset).
  i64 o_row_bytes;
  i64 o_head_bytes;
  i64 o_member_bytes;
  i64 lse_head_stride;
  i64 lse_row_stride;
  i64 lse_member_stride;
  i32 seqlen_q;          // kVarlen: the packed length total_q (LSE is (Hq, total_q))
  i32 seqlen_k;          // kVarlen: total_k (sequences are clamped to the packed rows)
  i32 num_heads_q;
  i32 head_group;       // Hq / Hk: query heads sharing one K/V head
  i32 page_size;             // kPaged (page_table above)
  i32 pages_per_seq;
  i32 page_rows;
  i32 num_m_blocks;     // ceil(Sq / kBlockM)
  i32 num_tiles;        // num_m_blocks * Hq * B (* num_splits): the grid strides over them (scheduler.cuh)
  i32 num_splits;       // kSplit: CTAs sharing one query tile's keys (1 without kSplit)
  i32 pack_group;       // kVarlen: rows per query position (packed GQA: a group's query heads of one
                        // position on adjacent rows, sharing the K/V head; mask.cuh); 1 otherwise
  i32 lpt_heads;        // kIsCausal: > 0 tiles go longest first in groups of this many (head, batch)
                        // pairs (scheduler.cuh tile_of), kVarlenTiles: of a sequence's heads
                        // (varlen_tile); 0 head by head
  i32 row_group;        // kSplit: rows per group of the q map and of O / LSE (above); 1: plain rows
  i32 q_tile_bytes;     // kSplit: bytes one Q box brings (row_group * its positions * D * 2; kBlockM
                        // rows, or fewer: a sequence's rows that fit one tile but do not divide it)
  i32 causal_offset;    // key j is visible to query i iff j <= i + causal_offset (kIsCausal) ...
  i32 local_offset;     // ... and j >= i + local_offset (kIsCausal; -2^30 without a window);
                        // kVarlen: both relative to each sequence's diagonal j = i + Sk - Sq
  float scale_log2;     // softmax_scale * log2(e): scores go through exp2; softcap * log2(e) with kSoftcap
  float softcap_scale;  // kSoftcap: softmax_scale / softcap, the factor inside the tanh
};

static_assert(sizeof(FwdParams) == FA3LITE_PARAMS_SIZE, "host and device disagree on the FwdParams size");
#ifdef FA3LITE_PARAMS_OK
static_assert(FA3LITE_PARAMS_OK, "host and device disagree on the FwdParams layout");
#endif

}}  // namespace fa3lite::attn
