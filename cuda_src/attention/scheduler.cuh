// Tile scheduler: tiles are (query block, head, batch), flattened into one index so the grid is
// never limited by the 65535 cap on grid y/z (B * H can be anything). Query blocks of one head are
// adjacent, so CTAs running together share K/V in L2. With a causal mask the last query blocks see
// the most keys: they come first so the long tiles do not trail at the end of the grid.
// A CTA takes tiles blockIdx.x, blockIdx.x + gridDim.x, ...: with one CTA per tile that is one tile;
// a kPersistent variant may run on a persistent grid (one CTA per SM, chosen by the host), where the
// producer loads the next tile's K/V and Q while the consumers finish the current one, hiding the
// per-tile start-up (first loads, pipeline fill) and the epilogue. With kDynamicTiles (causal) the
// tiles after the first are claimed from an atomic counter instead (greedy: a CTA takes the next
// tile when it is nearly done with its current one). The producer warp claims the next index once it
// has issued the current tile's loads and hands it to the consumers (FA3's pattern):
//   producer: [sync kTileEmpty, not the first time] write slot; arrive kTileFull
//   consumers: sync kTileFull; read slot; arrive kTileEmpty unless the index ends the loop (so no
//              arrival is left pending at exit)
// Barrier arrivals order each thread's prior accesses before the barrier completes, so the slot is
// written before it is read and read before it is rewritten. The slot is one word per CTA in global
// memory (p.tile_sched[1 + blockIdx.x]) rather than in shared memory, where racecheck would report
// the arrive-ordered read/write pair as a hazard. A launch with one CTA per tile (the host's choice
// when the tiles fit in one wave) has no counter and takes the static path.
#pragma once
#include "../ptx/gmem.cuh"
#include "../ptx/sync.cuh"
#include "config.cuh"
#include "named_barriers.cuh"
#include "params.cuh"

namespace fa3lite { namespace attn {

struct Tile {
  int m_block;
  int head;      // query head
  int head_kv;   // the K/V head it reads
  int batch;
};

__device__ __forceinline__ Tile tile_of(const FwdParams& p, int tile_idx) {
  const unsigned idx = static_cast<unsigned>(tile_idx);
  const int m_rev = idx % p.num_m_blocks;
  const unsigned rest = idx / p.num_m_blocks;
  Tile t;
  t.m_block = kIsCausal ? p.num_m_blocks - 1 - m_rev : m_rev;
  t.head = rest % p.num_heads_q;
  t.batch = rest / p.num_heads_q;
  t.head_kv = t.head / p.head_group;
  return t;
}

// Key blocks [begin, end) hold every key some valid row of query block m can see: the band's
// upper edge (causal_offset) cuts the end, its lower edge (local_offset) the beginning. begin >= end:
// the tile sees no key. The host keeps both offsets within +-2^30, so no sum overflows.
struct KeyBlocks {
  int begin;
  int end;
};

__device__ __forceinline__ KeyBlocks key_blocks(const FwdParams& p, int m_block) {
  int keys = p.seqlen_k;
  int first_key = 0;
  if (kIsCausal) {
    const int first_row = m_block * kBlockM;
    const int last_row = min(first_row + kBlockM, p.seqlen_q) - 1;
    keys = min(keys, last_row + p.causal_offset + 1);
    first_key = max(first_key, first_row + p.local_offset);
  }
  return {first_key / kBlockN, keys <= 0 ? 0 : (keys + kBlockN - 1) / kBlockN};
}

// Producer warp + all consumer threads meet at the hand-off barriers.
constexpr u32 kTileSyncThreads = kConsumerWarps * 32 + 32;

__device__ __forceinline__ bool dynamic_tiles(const FwdParams& p) {
  return kDynamicTiles && static_cast<int>(gridDim.x) < p.num_tiles;
}

// Producer warp (every lane; `leader` claims and writes): the tile after `idx`, handed to the
// consumers. `handoffs` counts the hand-offs so far.
__device__ __forceinline__ int producer_next_tile(const FwdParams& p, int idx, int& handoffs, bool leader) {
  if (!dynamic_tiles(p)) return idx + gridDim.x;
  int next = 0;
  if (leader) next = static_cast<int>(gridDim.x) + atomicAdd(p.tile_sched, 1);
  next = __shfl_sync(0xffffffffu, next, 0);
  if (handoffs > 0) named_barrier::sync(static_cast<u32>(NamedBarrier::kTileEmpty), kTileSyncThreads);
  if (leader) gmem::st_relaxed_cta(p.tile_sched + 1 + blockIdx.x, next);
  named_barrier::arrive(static_cast<u32>(NamedBarrier::kTileFull), kTileSyncThreads);
  ++handoffs;
  return next;
}

// Consumer thread: the tile after `idx`.
__device__ __forceinline__ int consumer_next_tile(const FwdParams& p, int idx) {
  if (!dynamic_tiles(p)) return idx + gridDim.x;
  named_barrier::sync(static_cast<u32>(NamedBarrier::kTileFull), kTileSyncThreads);
  const int next = gmem::ld_relaxed_cta(p.tile_sched + 1 + blockIdx.x);
  if (next < p.num_tiles) named_barrier::arrive(static_cast<u32>(NamedBarrier::kTileEmpty), kTileSyncThreads);
  return next;
}

}}  // namespace fa3lite::attn
