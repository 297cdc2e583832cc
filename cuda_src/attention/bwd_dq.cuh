// dQ accumulation into the global f32 accumulator. Narrow layout (D <= 128): consumers put their f32
// dQ tile in shared memory and the writer warp (producer warpgroup, warp 1) adds it with one bulk
// reduce per query block. Wide layout (D = 256): each consumer thread adds its own registers with
// vector reductions in the same order (bwd_consumer_wide.cuh). None of this runs in a variant
// without dQ (kNeedDq false): no writer warp, no dQ smem, no reads of dq_accum/dq_sem.
//
// Fragment order. The global accumulator holds, per (batch, head, query block), kBlockM x D floats
// laid out exactly as the consumers' registers are: float4 number
//     f = (g * kDqChunks + j) * 128 + t
// holds warpgroup-thread t's accumulators 4j..4j+3 of dQ tile g (columns g*kDqN ..., or with
// kDqSplitRows rows 64 g ...), i.e. with w = t / 32, l = t % 32, r = 16 w + l / 4 (+ 64 g with
// kDqSplitRows), c = 8 j + 2 (l % 4) (+ g * kDqN with kDqSplitCols):
//     (r, c), (r, c + 1), (r + 8, c), (r + 8, c + 1).
// So every shared store is a conflict-free 16-byte store and the bulk reduce is one contiguous run;
// the postprocess (bwd_postprocess.cu) puts rows and columns back in place.
//
// Hand-off per query block (named barriers, one consumer warpgroup + the writer warp of the block's
// buffer; buffers alternate, bwd_config.cuh kDqBuffers; each warpgroup has its own part of a buffer):
//   writer b, at the CTA's start: arrive kDqEmpty(b, wg) for both wg (the buffer starts empty)
//   consumers wg: sync kDqEmpty(b, wg); st.shared; fence.proxy.async; arrive kDqFull(b, wg)
//   writer b:     per wg: sync kDqFull(b, wg); (deterministic, first part: wait for its turn) bulk
//                 reduce of the part; then per wg: wait until read, arrive kDqEmpty(b, wg);
//                 (deterministic: wait until the adds are done, pass the turn on)
//   consumers wg, at the CTA's end: sync kDqEmpty(b, wg) of both buffers (the writer's last
//                 arrivals). Every sync has its arrival and neither side counts blocks or tiles: no
//                 state held through the loops, and no barrier left half-arrived at the end.
//
// Claims (p.dq_claims; narrow, tiles over all keys, not deterministic): the accumulator is not zeroed
// (the preprocess's pass over it was a third of its traffic). Each query block has a claim word in
// dq_sem. The writer takes a ticket (atomic add) once warpgroup 0's part of its tile is ready, so the
// first tile ready is the one stored. (A ticket taken when the writer started the block hid the atomic's
// round trip but made every tile wait for the first starter's, however late: -2..-3% at D = 128
// full 16k, benchmarks/RESULTS.md section 34.) Ticket 0 stores its tile (a bulk copy, not a reduce)
// and, once the copy has landed, releases kClaimStored into the word; every later ticket adds its tile
// after it acquired that flag -- usually from its own ticket, which read the word: with a causal mask
// the block's first visitor started there long before. Nobody waits for a CTA that has
// not started (the ticket holder is running), so the order of the launch does not matter. A block
// no key block visits keeps a zero word, and the postprocess writes zeros for it. Deterministic
// turns need no claims: turn 0 stores (narrow with two partial tiles, the first; the second adds after
// it, as any second part does; wide, the keeper zeroes at turn 0, below), and a turn counter still 0
// marks a block nobody visited.
// Wide: the consumers add from registers, into the accumulator the preprocess zeroed, or with turns
// into the part their keeper zeroed at the first turn. Two kinds of claims there lost, and so did
// first tiles stored from the consumers' registers at the first turn: every consumer change to the
// write path cost the default calls ~3% at full masks (benchmarks/RESULTS.md section 35).
//
// Wide, deterministic: the consumers add from registers, and the turn counters are kept by one warp
// per consumer warpgroup wg (producer warpgroup, warp 1 + wg), so no consumer thread ever spins on a
// counter or waits for its additions to reach global memory:
//   keeper wg:    wait for the turn of block m (turn 0: zero the warpgroup's part of the block);
//                 arrive kDqTurn(wg); sync kDqAdded(wg); red.release the counter (the release covers
//                 the warpgroup's additions: they precede the barrier, and a release is cumulative
//                 over what precedes it)
//   consumers wg: sync kDqTurn(wg); red.global.add the tile; arrive kDqAdded(wg)
// The keeper passes the turn on as soon as the additions are performed, while the consumers are
// already on the next block.

#pragma once
#include "../ptx/bulk.cuh"
#include "../ptx/debug.cuh"
#include "../ptx/gmem.cuh"
#include "../ptx/smem_vec.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "bwd_scheduler.cuh"
#include "bwd_smem.cuh"
#include "trace.cuh"

namespace fa3lite { namespace attn { namespace bwd {

// (batch, query head) pair `bh` = batch * Hq + head of this CTA's first head (the loops over a
// grouped tile's heads step it; one int held instead of batch and head: the dQ writer has 24 registers).
__device__ __forceinline__ int first_pair(const BwdParams& p, const BwdTile& t) { return t.batch * p.num_heads_q + t.head; }

// Index of query block m of pair bh among all query blocks: its dQ accumulator starts at
// dq_accum + dq_block * kDqBlockFloats.
__device__ __forceinline__ i64 dq_block(const BwdParams& p, int bh, int m) {
  return static_cast<i64>(bh) * p.num_m_blocks + m;
}

// Deterministic turn counter `slot` of query block m: narrow, one per block (the writer warp adds the
// whole tile); wide, one per consumer warpgroup, which add disjoint columns and so never wait for
// each other, only for the same warpgroup of the key block before.
__device__ __forceinline__ i32* dq_turn_counter(const BwdParams& p, int bh, int m, int slot) {
  return p.dq_sem + dq_block(p, bh, m) * kSemsPerBlock + slot;
}

// Store one warpgroup's dQ tile (64 x kDqN, accumulator layout) into `region` of buffer `buf`,
// as tile g.
__device__ __forceinline__ void store_dq_tile(const BwdSmem& sm, int buf, int region, int g, int tid,
                                              const float (&acc)[kDqN / 2]) {
  const u32 base = sm.dq(buf, region) + (g * kDqChunks * kWarpgroupThreads + tid) * 16;
#pragma unroll
  for (int j = 0; j < kDqChunks; ++j) {
    smem_vec::st_v4_f32(base + j * kWarpgroupThreads * 16, acc[4 * j], acc[4 * j + 1], acc[4 * j + 2],
                        acc[4 * j + 3]);
  }
}

// Warpgroup Wg's part of the hand-off of one dQ tile (the protocol at the top) into buffer `buf`.
// The warpgroup is a template argument so the barrier ids are immediates: a computed id takes a
// register that D = 64 softcap's consumers lack.
template <int Wg>
__device__ __forceinline__ void hand_dq_tile(const BwdSmem& sm, int buf, int tid,
                                             const float (&acc)[kDqN / 2]) {
  named_barrier::sync(dq_empty_barrier(buf, Wg), kDqSyncThreads);
  store_dq_tile(sm, buf, kDqAllKeys ? 0 : Wg, kDqAllKeys ? Wg : 0, tid, acc);
  fence::proxy_async_smem();
  named_barrier::arrive(dq_full_barrier(buf, Wg), kDqSyncThreads);
}

// Deterministic mode: block until the turn counter of this query block reaches `turn`. The copies
// and reductions that follow are ordered after the acquire (the bulk ones by the proxy fence).
__device__ __forceinline__ void wait_turn(const i32* sem, int turn) {
#ifdef FA3LITE_DEBUG
  for (u32 spins = 0; gmem::ld_acquire(sem) != turn; ++spins) {
    if (spins == FA3LITE_DEBUG_SPINS) debug::give_up(debug::kDqTurn, static_cast<u32>(turn), 0);
  }
#else
  while (gmem::ld_acquire(sem) != turn) {}
#endif
  gmem::fence_proxy_async_global();   // the bulk reduce (async proxy) comes after the acquire
}

// Claims: the flag in a query block's claim word once the first tile has landed (tickets count below it).
constexpr i32 kClaimStored = 1 << 30;

// Claims, a later ticket: wait until the first tile of the block has landed (`ticket`, the word's value
// when the ticket was taken, may already say so); the bulk reduce that follows is ordered after it.
__device__ __forceinline__ void wait_stored(const i32* claim, i32 ticket) {
#ifdef FA3LITE_DEBUG
  for (u32 spins = 0; !(ticket & kClaimStored); ++spins) {
    if (spins == FA3LITE_DEBUG_SPINS) debug::give_up(debug::kDqClaim, static_cast<u32>(ticket), 0);
    ticket = gmem::ld_acquire(claim);
  }
#else
  while (!(ticket & kClaimStored)) ticket = gmem::ld_acquire(claim);
#endif
  gmem::fence_proxy_async_global();   // the bulk reduce (async proxy) comes after the acquire
}

// Writer of dQ buffer `buf`: visits first + buf, first + buf + kDqBuffers, ... (query_block). Run by a
// whole warp; lane 0 issues the bulk operations. Each warpgroup's part goes out as soon as that
// warpgroup stored it, and is handed back as soon as the bulk reduce has read it. The buffer is a
// template argument so the barrier ids are immediates. The writer has 24 registers: claims and the
// deterministic turns (whose rotated order divides) each get a loop of their own, and neither spills.
// One visit: visit v of tile t for query head pair bh.
template <int Buf, bool Claims>
__device__ __forceinline__ void write_dq_visit(const BwdParams& p, const BwdSmem& sm, const BwdTile& t, bool leader,
                                               bool deterministic, int bh, int v) {
  const int m = query_block(t, v);
  float* const dst = p.dq_accum + dq_block(p, bh, m) * kDqBlockFloats;
  i32* const word = dq_turn_counter(p, bh, m, 0);   // the turn counter or claim word
  // The block's first tile is stored (the accumulator is not zeroed): ticket 0, or the first turn.
  i32 ticket = 0;
  const int turn = leader && deterministic ? dq_turn(p, t, m) : -1;
  bool first = turn == 0;
#pragma unroll
  for (int wg = 0; wg < kConsumerWarpgroups; ++wg) {
    named_barrier::sync(dq_full_barrier(Buf, wg), kDqSyncThreads);
    if (leader && Claims && wg == 0) {
      ticket = gmem::atom_acquire_add(word, 1);   // once the tile is ready (see the top)
      first = ticket == 0;
    }
    if (leader) {
      if (wg == 0 && deterministic) wait_turn(word, turn);
      if (wg == 0 && Claims && ticket != 0) wait_stored(word, ticket);
      // Two partial tiles of one block (kDqAllKeys false) add into the same floats: bulk
      // operations are unordered, so the fixed order needs the first to finish before the second
      // starts. (Adding the second into an accumulator of its own, summed by the postprocess,
      // measured no faster.) The halves of a tile over all keys are disjoint.
      if (!kDqAllKeys && wg > 0 && deterministic) tma::wait_group<0>();
      float* const part = dst + (kDqAllKeys ? wg * kDqPartBytes / 4 : 0);
      if (first && (kDqAllKeys || wg == 0)) {
        bulk::store(part, sm.dq(Buf, 0) + wg * kDqPartBytes, kDqPartBytes);
      } else {
        bulk::reduce_add_f32(part, sm.dq(Buf, 0) + wg * kDqPartBytes, kDqPartBytes);
      }
      tma::commit_group();
    }
  }
  // The consumers may store a later tile while the adds complete: they need not wait for the
  // round trip to global memory, only the next key block does. Warpgroup 0's part was read first.
  if (leader) tma::wait_group_read<1>();
  __syncwarp();
  named_barrier::arrive(dq_empty_barrier(Buf, 0), kDqSyncThreads);
  if (leader) tma::wait_group_read<0>();
  __syncwarp();
  named_barrier::arrive(dq_empty_barrier(Buf, 1), kDqSyncThreads);
  if (leader && (deterministic || (Claims && first))) {
    tma::wait_group<0>();                   // the adds or the first stores are done in global memory ...
    gmem::fence_proxy_async_global();
    // ... before the next key block adds (its turn), or any other adds (the stored flag)
    gmem::red_release_add(word, Claims ? kClaimStored : 1);
  }
}

// The visits w = Buf, Buf + kDqBuffers, ... of tile t over all its heads (the walk of
// bwd_scheduler.cuh): v runs on past a head's last visit and is carried into the next head's (minus
// its visits). Two forms of one walk, each the one whose 24-register writer compiles without spills:
// kVarlen, whose tile bounds live in registers, counts all visits in one loop; the other variants
// step through the heads. (Fixed lengths in the flat form read 5% slower at D = 64 causal 4k: RESULTS
// section 40.)
template <int Buf, bool Claims>
__device__ __forceinline__ void write_dq_tile(const BwdParams& p, const BwdSmem& sm, const BwdTile& t, unsigned idx,
                                              bool turns) {
  const bool leader = threadIdx.x % 32 == 0;
  if constexpr (kVarlen) {
    const int visits = t.m_end - visit_first(t);
    const int total = tile_heads(t) * visits;
    int bh = first_pair(p, t), v = visit_first(t) + Buf;
    for (int w = Buf; w < total; w += kDqBuffers, v += kDqBuffers) {
      for (; v >= t.m_end; v -= visits) ++bh;
      write_dq_visit<Buf, Claims>(p, sm, t, leader, turns, bh, v);
    }
  } else {
    int v = visit_first(t) + Buf;
    for (int bh = first_pair(p, t), left = tile_heads(t); left > 0; ++bh, --left, v -= t.m_end - visit_first(t))
    for (; v < t.m_end; v += kDqBuffers) {
      write_dq_visit<Buf, Claims>(p, sm, t, leader, turns, bh, v);
    }
  }
  if (Buf == 0 && leader) trace::mark(idx, 5);
}

// Writer of dQ buffer `buf` over the CTA's tiles (bwd_scheduler.cuh for_each_tile). Claims need tiles
// over all keys: two partial tiles of one block would need an order.
// No wait for the last adds to complete: the CTA may exit once its tiles were read from shared
// memory (per block), as a TMA-store epilogue does; the adds land before the kernel ends, which is
// all the postprocess needs. Waiting would hold the SM for a round trip to L2.
template <int Buf>
__device__ __forceinline__ void bwd_dq_writer(const BwdParams& p, const BwdSmem& sm) {
  named_barrier::arrive(dq_empty_barrier(Buf, 0), kDqSyncThreads);   // the buffer starts empty
  named_barrier::arrive(dq_empty_barrier(Buf, 1), kDqSyncThreads);
  if (kDqAllKeys && p.dq_claims) {
    for_each_tile(p, sm, [&](const BwdTile& t, unsigned idx, int) { write_dq_tile<Buf, true>(p, sm, t, idx, false); });
  } else {
    const bool turns = p.deterministic != 0;
    for_each_tile(p, sm, [&](const BwdTile& t, unsigned idx, int) { write_dq_tile<Buf, false>(p, sm, t, idx, turns); });
  }
}

// Consumer warpgroup Wg at the CTA's end: take the writers' last kDqEmpty arrivals (the protocol at
// the top).
template <int Wg>
__device__ __forceinline__ void drain_dq_buffers() {
#pragma unroll
  for (int b = 0; b < kDqBuffers; ++b) named_barrier::sync(dq_empty_barrier(b, Wg), kDqSyncThreads);
}

// Wide, deterministic, the first turn: zero warpgroup wg's part of query block m's accumulator (its
// columns: in fragment order one contiguous run of kDqChunks * 128 float4s), the whole keeper warp in
// 16-byte stores, before the warpgroup adds.
__device__ __forceinline__ void zero_dq_part(float* dst, int wg) {
  float* const part = dst + wg * kDqChunks * kWarpgroupThreads * 4;
  for (int f = threadIdx.x % 32; f < kDqChunks * kWarpgroupThreads; f += 32) {
    gmem::st_v4_f32(part + 4 * f, 0.f, 0.f, 0.f, 0.f);
  }
}

// Wide, deterministic: the turn keeper of consumer warpgroup wg. Run by a whole warp; lane 0 reads and
// advances the counters, and at the first turn the warp zeroes the part first.
// Deterministic mode has one CTA per tile (fa3lite/hopper/bwd.py main_ctas), so the keeper keeps the
// turns of tile blockIdx.x alone: a tile loop held its index through the turns and spilled it from
// the producer warpgroup's 32 registers (D = 256 causal). A debug build checks the grid at the
// kernel's entry (bwd_kernel.cu).
__device__ __forceinline__ void bwd_dq_turn_keeper(const BwdParams& p, const BwdTile& t, int wg) {
  const bool leader = threadIdx.x % 32 == 0;
  for (int bh = first_pair(p, t), left = tile_heads(t); left > 0; ++bh, --left) {
    for (int v = visit_first(t); v < t.m_end; ++v) {
      const int m = query_block(t, v);
      const int turn = leader ? dq_turn(p, t, m) : 0;
      if (leader) wait_turn(dq_turn_counter(p, bh, m, wg), turn);
      if (warp::shfl(turn, 0) == 0) zero_dq_part(p.dq_accum + dq_block(p, bh, m) * kDqBlockFloats, wg);
      __syncwarp();
      named_barrier::arrive(dq_turn_barrier(wg), kDqTurnThreads);
      named_barrier::sync(dq_added_barrier(wg), kDqTurnThreads);
      if (leader) gmem::red_release_add(dq_turn_counter(p, bh, m, wg), 1);
    }
  }
}

}}}  // namespace fa3lite::attn::bwd
