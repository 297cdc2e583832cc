// Compile-time configuration of one kernel variant. The host (fa3lite/variants.py) passes these as
// defines; every other file reads the constants below, never the macros.
#pragma once
#include "../ptx/types.cuh"
#include "head_dims.cuh"

namespace fa3lite { namespace attn {

constexpr int kBlockM = FA3LITE_BLOCK_M;     // query rows per CTA tile (64 per consumer warpgroup)
constexpr int kBlockN = FA3LITE_BLOCK_N;     // key rows per pipeline stage
constexpr int kStages = FA3LITE_STAGES;      // depth of the K/V ring
// A banded mask: key j is visible to query i iff j <= i + causal_offset (causal, or a window's right
// edge) and j >= i + local_offset (a window's left edge; the host passes -2^30 without one).
// Both bounds are runtime values, so a window costs no variant of its own (mask.cuh, scheduler.cuh).
constexpr bool kIsCausal = FA3LITE_CAUSAL != 0;
// Softcapping: scores become softcap * tanh(s * scale / softcap) before the softmax (mask.cuh).
constexpr bool kSoftcap = FA3LITE_SOFTCAP != 0;
// Learnable sinks: one logit per head in every row's softmax denominator (softmax.cuh finalize).
constexpr bool kSink = FA3LITE_SINK != 0;
constexpr bool kOverlap = FA3LITE_OVERLAP != 0;   // softmax of block n under the P.V GEMM of block n+1
constexpr bool kPingpong = FA3LITE_PINGPONG != 0; // consumer warpgroups take turns issuing GEMMs (pingpong.cuh)
// O is staged for its TMA store in a buffer of its own (where shared memory has room), so the next
// tile's Q can load while this tile's epilogue runs; otherwise O reuses the Q tile (fwd_smem.cuh) or,
// kDirectO, is stored from registers.
constexpr bool kSeparateO = FA3LITE_SEPARATE_O != 0;
// Q buffers: a persistent CTA with its own O buffer (fixed lengths, where shared memory has room)
// keeps two, so the producer loads the next tile's Q while the consumers still read this one's
// (fwd_producer.cuh); otherwise one, loaded once the previous tile's last Q K^T is done.
constexpr int kQStages = FA3LITE_Q_STAGES;
// A CTA may stride over several tiles (scheduler.cuh); without it the host launches one CTA per tile.
constexpr bool kPersistent = FA3LITE_PERSISTENT != 0;
// Causal tiles differ in length, so a persistent CTA claims its next tile when it needs one (an atomic
// counter) instead of taking every gridDim.x-th: greedy list scheduling, longest tiles first.
constexpr bool kDynamicTiles = kPersistent && kIsCausal;
// Packed variable-length sequences (params.cuh): each tile loads through tensor maps of its own
// sequence, which the CTA writes (scheduler.cuh make_seq_maps) -- except the split kernel (below).
constexpr bool kVarlen = FA3LITE_VARLEN != 0;
// A persistent varlen kernel numbers only the tiles of real rows (the host knows no lengths, only
// their maximum) and claims them from the counter whatever the mask: scheduler.cuh varlen_tile.
constexpr bool kVarlenTiles = kVarlen && kPersistent;
// Split-KV (decode shapes: few query rows, long keys): each sequence's key blocks are shared out over
// p.num_splits CTAs per query tile, each writing O normalised over its own keys (f32) and that
// share's LSE; combine.cu merges them. With num_splits == 1 the tile writes its output directly.
constexpr bool kSplit = FA3LITE_SPLIT != 0;
static_assert(!kSplit || (kVarlen && !kPersistent), "split-KV runs on the varlen layout, one CTA per tile");
// Whether a tile loads through its sequence's own copies of the maps, cut at the sequence's end. The
// split kernel (decode: a CTA's whole life is a few key blocks) loads through the packed tensors' own
// maps at the sequence's rows instead, so its first loads wait for no map writes and fences: rows
// past the sequence's end may arrive, but a query row past it is never written, a key past it is
// masked, and V's rows past it are cleared before the P.V GEMM (fwd_consumer.cuh clear_v_tail).
constexpr bool kSeqMaps = kVarlen && !kSplit;
// A persistent CTA without room for sO stores O straight from the accumulator registers to global
// memory (fwd_epilogue.cuh store_rows), so sQ is free once the tile's mainloop is done and the next
// tile's Q loads under the epilogue (staged in sQ, Q loaded only after the TMA store, or the varlen
// copy, had read O out: D = 256, where a Q tile is 64 KB). The split kernel (one tile per CTA) keeps
// its own stores.
constexpr bool kDirectO = !kSeparateO && kPersistent && !kSplit;
// Paged K/V read in place (decode): K and V are a pool of pages (num_pages, page_size, Hk, D) and
// sequence b's key row r lives in page p.page_table[b][r / page_size]; each key block arrives in
// chunks of p.page_rows rows (fwd_producer.cuh load_paged). Split tile only (one consumer warpgroup).
constexpr bool kPaged = FA3LITE_PAGED != 0;
static_assert(!kPaged || kSplit, "paged K/V runs in the split-KV (decode) kernel");

constexpr int kWarpgroupThreads = 128;
constexpr int kConsumerWarpgroups = kBlockM / 64;
constexpr int kConsumerWarps = kConsumerWarpgroups * 4;
constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);

// Register split after setmaxnreg: the producer only issues TMA, the consumers hold S, P and O.
// The register file holds 64K 32-bit registers; 128 * 24 + 256 * 240 and 128 * 32 + 384 * 160 fit it.
// One consumer warpgroup (the split-KV decode tile) leaves the pool half empty: the producer, whose
// key range takes divisions there (scheduler.cuh key_blocks), gets 48 and spills nothing.
constexpr int kProducerRegs = kConsumerWarpgroups == 3 ? 32 : kConsumerWarpgroups == 1 ? 48 : 24;
constexpr int kConsumerRegs = kConsumerWarpgroups == 3 ? 160 : 240;

constexpr int kElemBytes = 2;
constexpr int kSwizzleCols = 64;                        // 16-bit elements in one 128-byte swizzle row
constexpr int kColBlocks = kHeadDim / kSwizzleCols;     // 64-column blocks of a tile
constexpr int kRowBytes = kSwizzleCols * kElemBytes;    // 128

constexpr int kQTileBytes = kBlockM * kHeadDim * kElemBytes;
constexpr int kKVTileBytes = kBlockN * kHeadDim * kElemBytes;
static_assert(!kSplit || kConsumerWarpgroups == 1, "split-KV: the one consumer warpgroup clears V's tail");
static_assert(kQStages == 1 || (kQStages == 2 && kSeparateO && kPersistent && !kVarlen),
              "two Q buffers: persistent fixed-length kernels with their own O buffer (a varlen CTA's two map "
              "sets rely on each Q load waiting for the tile before last: scheduler.cuh)");

static_assert(kHeadDim % kSwizzleCols == 0, "head dim must be a multiple of 64");
static_assert(kBlockM == 64 * kConsumerWarpgroups && kConsumerWarpgroups <= 3, "one to three consumer warpgroups");
static_assert(kBlockN % 16 == 0 && kBlockN <= 256, "kBlockN is a wgmma N and a k16 multiple");
static_assert(kHeadDim <= 256, "wgmma N (the P.V output width) is at most 256");

}}  // namespace fa3lite::attn
