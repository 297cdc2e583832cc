// Compile-time configuration of one backward kernel variant. The host (fa3lite/hopper/bwd.py)
// passes the macros; every other bwd_* file reads the constants below, never the macros.
//
// One CTA owns kBlockN key rows of one (query head, batch) and walks the query blocks that can see
// them, kBlockM query rows at a time. Warpgroup 0 is the producer (TMA loads; warps 1-2 write dQ,
// narrow, or keep the deterministic dQ turns, wide); consumer warpgroups 1 and 2 keep dK/dV in
// registers for the whole CTA and recompute S^T and dP^T per query block. Two layouts of the
// consumer work:
//   D <= 128 ("narrow", bwd_consumer.cuh): each consumer warpgroup owns 64 of the 128 key rows with
//            all D columns; P^T and dS^T stay in registers as the A operand of dV/dK.
//   D = 256  ("wide", bwd_consumer_wide.cuh): 128 f32 columns of dK plus 128 of dV already fill a
//            warpgroup's registers, so the CTA takes 64 key rows, each warpgroup owns 128 of the 256
//            columns of dK/dV/dQ and computes S^T/dP^T for 32 of the 64 query columns; P^T and dS^T
//            are exchanged through shared memory.
#pragma once
#include "../ptx/types.cuh"
#include "head_dims.cuh"

namespace fa3lite { namespace attn { namespace bwd {

// Banded mask and softcap as in the forward (config.cuh): key j visible to query i iff
// i + local_offset <= j <= i + causal_offset; softcap recomputes tanh per score (bwd_softmax.cuh).
constexpr bool kIsCausal = FA3LITE_CAUSAL != 0;
constexpr bool kSoftcap = FA3LITE_SOFTCAP != 0;
// Packed variable-length sequences (bwd_params.cuh): each CTA loads through maps of its sequence.
constexpr bool kVarlen = FA3LITE_VARLEN != 0;
// A CTA walks many tiles (bwd_scheduler.cuh for_each_tile), or takes tile blockIdx.x alone. Host
// mirror and the measurements behind the choice (the D = 64 kernels): BwdVariant.persistent.
constexpr bool kPersistent = FA3LITE_BWD_PERSISTENT != 0;
// GQA/MQA: dK/dV are written per query head in f32 and summed over the head group by the host.
constexpr bool kDkvF32 = FA3LITE_DKV_F32 != 0;
// The gradients this variant computes. Without dQ: no dS^T -> dQ path (its smem, barriers, wgmma and
// the writer warp); without dK/dV: no dV/dK wgmmas, no dK/dV registers or stores, P^T only as far as
// dS^T needs it. Every step that stays is the same code as in the full kernel.
constexpr bool kNeedDq = FA3LITE_NEED_DQ != 0;
constexpr bool kNeedDkv = FA3LITE_NEED_DKV != 0;
constexpr bool kWide = kHeadDim > 128;
// Deterministic mode may visit a full mask's query blocks rotated (bwd_scheduler.cuh kRotatedTurns).
// The wrap costs D = 64 softcap's consumers a register they lack (8 bytes of spills): those keep the
// ascending order, whatever gradients they compute (dQ alone adds in the same order as with dK/dV).
// Host mirror: BwdVariant.rotatable_turns.
constexpr bool kRotatableTurns = !kIsCausal && !(kSoftcap && kHeadDim == 64);
// A CTA may walk a runtime count of query heads (bwd_scheduler.cuh cta_heads): GQA's whole group of
// one K/V head, summing their dK/dV in registers. A variant of its own, so that MHA kernels keep a
// compile-time head count of 1 where that is faster: at D = 64 the runtime count cost the MHA
// backward 2.5-6% (RESULTS section 38, gqa_round6). The host compiles the walk into every unpadded
// D = 256 variant with 16-bit dK/dV, MHA too: there the MHA kernel with the compile-time count ran
// 2-3% slower (section 39; the code differs only in the head loops). Only to sum 16-bit dK/dV (not
// kDkvF32); not at D = 64 with softcap, nor at D = 192 (padded in 256): the walk spilled 4 bytes
// there. Host mirrors: BwdVariant.walks_heads, groupable_heads.
constexpr bool kWalkHeads = FA3LITE_WALK_HEADS != 0;
static_assert(!kWalkHeads || (kNeedDkv && !kDkvF32 && !(kHeadDim == 64 && kSoftcap) &&
                                 !(kHeadDim == 256 && (kPaddedQK || kPaddedV))),
              "walking heads: 16-bit dK/dV, not D = 64 with softcap, not padded in 256");

// Query rows per step: the N of S^T = K Q^T, the K of dV += P^T dO. The host picks it per head dim
// (BwdVariant.block_m): 128 at D = 64, where S^T and dP^T of 128 queries still fit next to dK/dV (32
// floats each) and every SS wgmma reads half the shared memory per FLOP of a 64-query step; 64 else.
constexpr int kBlockM = FA3LITE_BWD_BLOCK_M;
constexpr int kBlockN = kWide ? 64 : 128;   // key rows per CTA

constexpr int kWarpgroupThreads = 128;
constexpr int kConsumerWarpgroups = 2;
constexpr int kConsumerThreads = kConsumerWarpgroups * kWarpgroupThreads;
constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);
constexpr int kWgKeys = kWide ? kBlockN : kBlockN / kConsumerWarpgroups;     // key rows of a WG's dK/dV (wgmma M)
constexpr int kWgCols = kWide ? kHeadDim / kConsumerWarpgroups : kHeadDim;   // columns of a WG's dK/dV
constexpr int kWgQueries = kWide ? kBlockM / kConsumerWarpgroups : kBlockM;  // query columns of a WG's S^T

// Registers per thread after setmaxnreg, within what the launch holds (static_assert below). D > 128:
// the D = 256 causal producer loop and turn keeper spilled 20-44 bytes in 24 registers under NVRTC
// 13.5 (none under 13.0), and the varlen causal keeper 12 bytes in 32 in the code that walks tiles
// (bwd_scheduler.cuh for_each_tile, taken once there); the consumers there need no more than 232,
// which leaves the producers 40 of the pool.
constexpr int kProducerRegs = kWide ? 40 : 24;
constexpr int kConsumerRegs = kWide ? 232 : 240;

constexpr int kElemBytes = 2;
constexpr int kSwizzleCols = 64;                         // 16-bit elements in one 128-byte swizzle row
constexpr int kRowBytes = kSwizzleCols * kElemBytes;     // 128
constexpr int kColBlocks = kHeadDim / kSwizzleCols;

constexpr int kQTileBytes = kBlockM * kHeadDim * kElemBytes;    // Q and dO tiles
constexpr int kStatBytes = kBlockM * 4;                          // a query block's LSE (or dPsum) row, f32
constexpr int kKTileBytes = kBlockN * kHeadDim * kElemBytes;    // K and V tiles

// dQ (kBlockM x D) = dS (kBlockM x kBlockN) K, one 64-row (wgmma M) x kDqN tile per consumer warpgroup.
// 128-query steps: the warpgroups split dQ's rows (queries). Narrow D = 128 and wide: they split its
// columns. Both need every key row, so dS goes through shared memory and a barrier. D = 64 with
// 64-query steps: a 32-column half would start inside a swizzle atom, so each warpgroup computes a
// partial dQ over its own key rows and both partials are added.
constexpr bool kDqSplitRows = kBlockM == 2 * kSwizzleCols;
// Depth of the Q/dO ring. 128-query steps with dQ keep one dS^T buffer (kDsBuffers) and spend the
// 32 KB on a third stage: +1..4% from 2k at D = 64 (benchmarks/RESULTS.md section 31). It was aimed
// at the samples on the wait for dO, but those were the wait queued behind the LSE loads, not a late
// copy (section 32; bwd_softmax.cuh kLseAfterDpt). Banded masks over few query blocks keep two (the
// one-buffer hand-off costs more than the depth gains there). Host: BwdVariant.stages.
constexpr int kStages = FA3LITE_BWD_STAGES;
constexpr bool kThreeStages = kStages == 3;
static_assert(kStages == 2 || (kThreeStages && kDqSplitRows && kNeedDq),
              "a third Q/dO stage only in place of a dS^T buffer");
constexpr bool kDqSplitCols = !kDqSplitRows && kHeadDim >= 128;
constexpr bool kDqAllKeys = kDqSplitRows || kDqSplitCols;                        // a dQ tile sums over all keys
constexpr int kDqN = kDqSplitCols ? kHeadDim / kConsumerWarpgroups : kHeadDim;  // N of one dQ wgmma
constexpr int kDqWgmmaK = kDqAllKeys ? kBlockN : kWgKeys;                        // keys a warpgroup sums over
constexpr int kDqChunks = kDqN / 8;                               // float4 groups per thread per dQ tile
constexpr int kDqBlockFloats = kBlockM * kHeadDim;                // one query block of the f32 accumulator
// Narrow: dQ tiles go through shared memory and one bulk reduce (writer warp). Wide: no room for a
// 64 KB f32 tile next to two Q/dO stages, so each thread adds its registers with vector reductions.
constexpr bool kDqViaSmem = !kWide;
constexpr int kDqRegions = !(kNeedDq && kDqViaSmem) ? 0 : (kDqAllKeys ? 1 : kConsumerWarpgroups);
constexpr int kDqRegionBytes = kDqBlockFloats * 4;
// Two dQ buffers, each with its own writer warp, alternate query blocks: in deterministic mode a
// writer waits for its adds to complete before passing the turn on (a round trip to L2 per block,
// longer than a 64-query D = 64 block's math), and two writers keep two of those in flight.
// 128-query steps keep one: a second 32 KB tile does not fit beside the rest (bwd_smem.cuh).
constexpr int kDqBuffers = kDqRegions == 0 ? 0 : (kDqSplitRows ? 1 : 2);
// Deterministic turn counters per query block: one (narrow: one writer warp adds the block), or one
// per consumer warpgroup (wide: each adds its own columns). The host mirrors this (fa3lite/hopper/bwd.py).
constexpr int kSemsPerBlock = kWide ? kConsumerWarpgroups : 1;
constexpr int kDsTileBytes = kBlockN * kBlockM * kElemBytes;      // dS^T (and wide: P^T), [key row][query]
// dS^T goes through smem for dQ, and in the wide layout also as the A operand of dK (narrow: dK reads
// dS^T from registers). P^T goes through smem only in the wide layout, for dV.
constexpr bool kDsViaSmem = kNeedDq || kWide;
constexpr int kDsBuffers = !kDsViaSmem ? 0 : (kDqAllKeys && !kThreeStages ? 2 : 1);   // see the consumers
constexpr int kPBuffers = (kWide && kNeedDkv) ? kDsBuffers : 0;

static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "backward head dims: 64, 128, 256");
static_assert(kNeedDq || kNeedDkv, "a backward variant computes dQ, dK/dV or both");
static_assert(kNeedDkv || !kDkvF32, "f32 dK/dV only in a variant that computes dK/dV");
static_assert(kBlockM == kSwizzleCols || (kBlockM == 2 * kSwizzleCols && kHeadDim == 64),
              "query steps of 64, or of 128 at D = 64 (dS^T: one or two 64-column blocks)");
static_assert(kDqN % kSwizzleCols == 0, "dQ column tiles start on swizzle-atom boundaries");
// setmaxnreg moves registers inside the CTA's pool: what the launch gave each thread (65536 / kThreads,
// in steps of 8: 168), never the whole register file; past it the consumers' increase never returns.
constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumerThreads <= kLaunchRegs * kThreads,
              "register pool");

// kDsFull is used whenever dS^T goes through smem (kDsViaSmem), every other barrier only with kNeedDq.
// Narrow: each consumer warpgroup hands its own part of a dQ tile to the writer warp of the tile's
// buffer through a pair of barriers of its own (warpgroup + writer warp), so neither warpgroup
// waits for the other's store or for the other half's bulk reduce. Wide: the turn barriers reuse
// those ids (a wide variant puts no dQ tile in shared memory).
enum class NamedBarrier : unsigned {
  kDsFull = 1,     // both consumer warpgroups wrote their dS^T (and P^T) parts
  kDsWg0 = 2,      // one warpgroup wrote its dS^T rows (partial dQ: each reads only its own rows)
  kDsWg1 = 3,
  kDqFull = 4,     // 4 + 2 buf + wg: warpgroup wg stored its part of buffer buf; the writer may reduce it
  kDqEmpty = 8,    // 8 + 2 buf + wg: the writer's bulk reduce has read that part; wg may overwrite it
  kEpilogue = 12,  // both consumer warpgroups are past their last wgmma / staged their dK, dV
  kDsReadWg0 = 13,  // one dS^T buffer over all keys: warpgroup wg's dQ wgmma has read the buffer
  kDsReadWg1 = 14,
  kDqTurnWg0 = kDqFull,    // wide, deterministic: the turn keeper saw this warpgroup's turn to add come
  kDqAddedWg0 = kDqEmpty,  // wide, deterministic: every thread of this warpgroup issued its dQ additions
};

__device__ __forceinline__ u32 dq_full_barrier(int buf, int wg) {
  return static_cast<u32>(NamedBarrier::kDqFull) + 2 * buf + wg;
}
__device__ __forceinline__ u32 dq_empty_barrier(int buf, int wg) {
  return static_cast<u32>(NamedBarrier::kDqEmpty) + 2 * buf + wg;
}
constexpr unsigned kDqSyncThreads = kWarpgroupThreads + 32;   // one consumer warpgroup + the writer warp
// A warpgroup's part of a dQ buffer: half of the tile's floats when the tile sums over all keys (its
// rows or columns: tile g = wg in the fragment order, bwd_dq.cuh), else its own partial region.
constexpr int kDqPartBytes = kDqAllKeys ? kDqRegionBytes / kConsumerWarpgroups : kDqRegionBytes;

__device__ __forceinline__ u32 dq_turn_barrier(int wg) {
  return static_cast<u32>(NamedBarrier::kDqTurnWg0) + wg;
}
__device__ __forceinline__ u32 dq_added_barrier(int wg) {
  return static_cast<u32>(NamedBarrier::kDqAddedWg0) + wg;
}
constexpr unsigned kDqTurnThreads = kWarpgroupThreads + 32;  // one consumer warpgroup + its turn keeper

}}}  // namespace fa3lite::attn::bwd
