// Compile-time configuration of one backward kernel variant. The host (fa3lite/hopper_bwd.py)
// passes the macros; every other bwd_* file reads the constants below, never the macros.
//
// One CTA owns kBlockN key rows of one (query head, batch) and walks the query blocks that can see
// them, kBlockM query rows at a time. Warpgroup 0 is the producer (TMA loads, dQ writer); consumer
// warpgroups 1 and 2 each own kWgKeys of the key rows: their dK/dV accumulators live in registers
// for the whole CTA, S^T and dP^T are recomputed per query block.
#pragma once
#include "../ptx/types.cuh"

#ifndef FA3LITE_HEAD_DIM
#error "FA3LITE_HEAD_DIM must be defined by the host"
#endif

namespace fa3lite { namespace attn { namespace bwd {

#if FA3LITE_DTYPE_BF16
using Element = bf16_t;
#else
using Element = f16_t;
#endif

constexpr int kHeadDim = FA3LITE_HEAD_DIM;
constexpr bool kIsCausal = FA3LITE_CAUSAL != 0;
// GQA/MQA: dK/dV are written per query head in f32 and summed over the head group by the host.
constexpr bool kDkvF32 = FA3LITE_DKV_F32 != 0;

constexpr int kBlockM = 64;     // query rows per step: the N of S^T = K Q^T and the K of dV += P^T dO
constexpr int kBlockN = 128;    // key rows per CTA
constexpr int kStages = 2;      // depth of the Q/dO ring

constexpr int kWarpgroupThreads = 128;
constexpr int kConsumerWarpgroups = 2;
constexpr int kConsumerThreads = kConsumerWarpgroups * kWarpgroupThreads;
constexpr int kConsumerWarps = kConsumerThreads / 32;
constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);
constexpr int kWgKeys = kBlockN / kConsumerWarpgroups;   // key rows of one consumer warpgroup (wgmma M)

constexpr int kProducerRegs = 24;
constexpr int kConsumerRegs = 240;

constexpr int kElemBytes = 2;
constexpr int kSwizzleCols = 64;                         // 16-bit elements in one 128-byte swizzle row
constexpr int kRowBytes = kSwizzleCols * kElemBytes;     // 128
constexpr int kColBlocks = kHeadDim / kSwizzleCols;

constexpr int kQTileBytes = kBlockM * kHeadDim * kElemBytes;    // Q and dO tiles
constexpr int kKTileBytes = kBlockN * kHeadDim * kElemBytes;    // K and V tiles
constexpr int kRowStatBytes = kBlockM * 4;                      // LSE (base 2) or dPsum of one query block

// dQ (kBlockM x D) = dS (kBlockM x kBlockN) K. With D >= 128 the two consumer warpgroups split its
// columns (each needs every key row, so dS goes through shared memory and a barrier); with D = 64 a
// 64-column half would start inside a swizzle atom, so each warpgroup instead computes a partial dQ
// over its own key rows and the writer adds both partials.
constexpr bool kDqSplitCols = kHeadDim >= 128;
constexpr int kDqN = 64;                                          // N of one dQ wgmma
constexpr int kDqWgmmaK = kDqSplitCols ? kBlockN : kWgKeys;       // key rows one warpgroup sums over
constexpr int kDqRegions = kDqSplitCols ? 1 : kConsumerWarpgroups;
constexpr int kDqBlockFloats = kBlockM * kHeadDim;                // one query block of the f32 accumulator
constexpr int kDqRegionBytes = kDqBlockFloats * 4;
constexpr int kDqChunks = kDqN / 8;                               // float4 groups per thread per dQ tile
constexpr int kDsTileBytes = kBlockN * kBlockM * kElemBytes;      // dS^T, [key row][query column]
constexpr int kDsBuffers = kDqSplitCols ? 2 : 1;                  // see bwd_consumer.cuh

static_assert(kHeadDim == 64 || kHeadDim == 128, "this backward kernel supports head dims 64 and 128");
static_assert(kBlockM == kSwizzleCols, "dS^T rows are one 128-byte swizzle row wide");
static_assert(kDqSplitCols ? kHeadDim == kConsumerWarpgroups * kDqN : kHeadDim == kDqN, "dQ column split");
static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumerThreads <= 65536, "register file");

enum class NamedBarrier : unsigned {
  kDsFull = 1,     // both consumer warpgroups wrote their dS^T rows (column-split dQ)
  kDqFull = 2,     // consumers wrote the dQ tile to smem; the writer warp may reduce it into global
  kDqEmpty = 3,    // the writer's bulk reduce has read the dQ tile; consumers may overwrite it
  kDsWg0 = 4,      // one warpgroup wrote its dS^T rows (row-split dQ: each reads only its own rows)
  kDsWg1 = 5,
};
constexpr unsigned kDqSyncThreads = kConsumerThreads + 32;   // consumers + the writer warp

}}}  // namespace fa3lite::attn::bwd
