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
//   producer: [sync kTileEmpty, not the first time] write slot; arrive kTileFullWg0 + w for each w
//   consumer warpgroup w: sync kTileFullWg0 + w; read slot; arrive kTileEmpty unless the index ends
//              the loop (so no arrival is left pending at exit)
// Barrier arrivals order each thread's prior accesses before the barrier completes, so the slot is
// written before it is read and read before it is rewritten. Each warpgroup has its own full barrier,
// so none waits for another to take the tile: a warpgroup takes its next tile right after its
// mainloop (the slot's load then runs under its epilogue) and pingpong's offset between warpgroups
// survives the tile boundary (one barrier for all cost a d=128 causal 1k tile ~1 us). The slot is
// one word per CTA in global memory (p.tile_sched[1 + blockIdx.x]) rather than in shared memory,
// where racecheck would report the arrive-ordered read/write pair as a hazard. A launch with one CTA
// per tile (the host's choice when the tiles fit in one wave) has no counter and takes the static path.
// kVarlenTiles: the host's tile count pads every sequence to max_seqlen_q (it never reads the
// lengths), so a third of a typical batch's tiles would be empty. The claims there count only the
// tiles of real rows, sequence after sequence (varlen_tile), and every tile -- the first too -- goes
// through the hand-off, so both roles see only tiles with rows.
#pragma once
#include "../ptx/gmem.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "config.cuh"
#include "launch_order.cuh"
#include "mask.cuh"
#include "named_barriers.cuh"
#include "params.cuh"
#include "tile_io.cuh"

namespace fa3lite { namespace attn {

struct Tile {
  int m_block;
  int head;      // query head
  int head_kv;   // the K/V head it reads
  int batch;
  int split;     // kSplit: which share of the keys (0 otherwise)
};

// Causal tiles with p.lpt_heads (fixed lengths) go longest first within groups of heads whose K/V fit
// in L2 (launch_order.cuh): numbered head by head, the last head's longest tile was claimed last and
// ran on alone (a traced d=64 causal 16k run: SMs idle 73 us on average after their last tile, 3.6%).
__device__ __forceinline__ Tile tile_of(const FwdParams& p, int tile_idx) {
  const unsigned idx = static_cast<unsigned>(tile_idx);
  const unsigned blocks = p.num_m_blocks;
  const unsigned group = !kVarlen && kIsCausal ? static_cast<unsigned>(p.lpt_heads) : 0u;
  const LaunchSlot s = launch_slot(idx, blocks, p.num_tiles / blocks, group);
  const unsigned m_rev = s.tile;
  unsigned rest = s.pair;
  Tile t;
  t.m_block = kIsCausal ? p.num_m_blocks - 1 - m_rev : m_rev;
  t.split = 0;
  if constexpr (kSplit) {   // the splits of one query tile run side by side
    t.split = rest % p.num_splits;
    rest /= p.num_splits;
  }
  t.head = rest % p.num_heads_q;
  t.batch = rest / p.num_heads_q;
  t.head_kv = t.head / p.head_group;
  return t;
}

// The sequence a tile belongs to: its rows in the (packed) tensors, its lengths and its band. Fixed
// lengths: batch b is its own map coordinate. kVarlen: the lengths come from cu_seqlens / seqused,
// the band offsets are relative to the sequence's diagonal (host: fa3lite/hopper/varlen.py), and the
// tile's rows are [m_block * kBlockM, seqlen_q) of the sequence: a tile past its end has no work.
struct Seq {
  int q_start;        // first row in the packed tensors (0 with fixed lengths)
  int k_start;
  int seqlen_q;
  int seqlen_k;
  int causal_offset;
  int local_offset;
};

// kVarlen: sequence b's first row of the packed q/O rows, clamped to them (b <= B).
__device__ __forceinline__ int q_start_of(const FwdParams& p, int b) {
  return min(max(p.cu_seqlens_q[b], 0), p.seqlen_q);
}

__device__ __forceinline__ Seq seq_of(const FwdParams& p, int batch) {
  if constexpr (!kVarlen) {
    return {0, 0, p.seqlen_q, p.seqlen_k, p.causal_offset, p.local_offset};
  } else {
    // Offsets and lengths are device values the host never reads: clamped to the packed tensors'
    // rows (p.seqlen_q = total_q, p.seqlen_k = total_k), so malformed ones give that sequence wrong
    // rows, never a read or write out of bounds.
    const int q_start = q_start_of(p, batch);
    const int k_start = min(max(p.cu_seqlens_k[batch], 0), p.seqlen_k);
    int sq = p.seqused_q != nullptr ? p.seqused_q[batch] : p.cu_seqlens_q[batch + 1] - q_start;
    int sk = p.seqused_k != nullptr ? p.seqused_k[batch] : p.cu_seqlens_k[batch + 1] - k_start;
    sq = min(max(sq, 0), p.seqlen_q - q_start);
    sk = min(max(sk, 0), p.seqlen_k - k_start);
    const int positions = sq / p.pack_group;   // the diagonal is between query positions and keys
    return {q_start, k_start, sq, sk, p.causal_offset + sk - positions, p.local_offset + sk - positions};
  }
}

// Key blocks [begin, end) hold every key some valid row of the tile's query block can see: the band's
// upper edge (causal_offset) cuts the end, its lower edge (local_offset) the beginning. begin >= end:
// the tile sees no key. The host keeps both offsets within +-2^30, so no sum overflows.
// kSplit: the tile's blocks are cut into num_splits equal runs (the last ones empty when there are
// fewer blocks than splits) and the tile keeps its run; the mask works on absolute key positions, so
// no other role knows of splits. Cutting the band, not the sequence, keeps a window's few blocks spread.
struct KeyBlocks {
  int begin;
  int end;
};

__device__ __forceinline__ KeyBlocks key_blocks(const FwdParams& p, const Seq& s, const Tile& t) {
  int keys = s.seqlen_k;
  int first_key = 0;
  if (kIsCausal) {   // the band of the tile's query positions (mask.cuh query_pos)
    const int first_row = t.m_block * kBlockM;
    const int last_row = min(first_row + kBlockM, s.seqlen_q) - 1;
    keys = min(keys, query_pos(last_row, p.pack_group) + s.causal_offset + 1);
    first_key = max(first_key, query_pos(first_row, p.pack_group) + s.local_offset);
  }
  KeyBlocks kb{first_key / kBlockN, keys <= 0 ? 0 : (keys + kBlockN - 1) / kBlockN};
  if constexpr (kSplit) {
    const int per_split = (max(kb.end - kb.begin, 0) + p.num_splits - 1) / p.num_splits;
    kb.begin += t.split * per_split;
    kb.end = min(kb.end, kb.begin + per_split);
  }
  return kb;
}

// kSeqMaps: the CTA's copies of the q, k, v maps, pointed at its sequence's rows and cut at its end,
// so that TMA boxes past the end arrive as zeros (not the next sequence's rows). One thread.
// A persistent CTA keeps two sets (SeqMapSets): its tiles of the sequence whose maps it made last
// reuse them, and another sequence's go into the other set. Counting the CTA's tiles with keys, tile
// j - 1 used the current set, so the other one was last used by tile j - 2 or earlier. Copies through
// a map may still be in flight when the producer moves on, but those of tile j - 2 have all landed
// by then (tile j - 1's Q load waited for q_empty, which the consumers arrive on once they are done
// with tile j - 2's Q, after its every K/V stage arrived).
constexpr int kMapSets = kPersistent ? 2 : 1;

__device__ __forceinline__ TmaDesc* seq_map_set(const FwdParams& p, u32 set) {
  return p.seq_maps + 3 * (kMapSets * blockIdx.x + set % kMapSets);
}

__device__ __forceinline__ const TmaDesc* seq_map(const FwdParams& p, u32 set, int which) {
  return seq_map_set(p, set) + which;
}

__device__ __forceinline__ void make_seq_maps(const FwdParams& p, const Seq& s, u32 set) {
  TmaDesc* const slots = seq_map_set(p, set);
  const TmaDesc* const templates[3] = {&p.q, &p.k, &p.v};
  const char* const bases[3] = {p.q_base + s.q_start * p.q_row_bytes, p.k_base + s.k_start * p.k_row_bytes,
                                p.v_base + s.k_start * p.v_row_bytes};
  const u32 rows[3] = {static_cast<u32>(s.seqlen_q), static_cast<u32>(s.seqlen_k), static_cast<u32>(s.seqlen_k)};
  tile_io::make_seq_maps<3>(slots, templates, bases, rows);
#pragma unroll
  for (int i = 0; i < 3; ++i) tma::fence_map_acquire(slots + i);   // this thread issues the copies
}

// Producer warp (every lane alike): which set holds the maps of which sequence. Making a set costs
// the tile's first load a round trip through the tensor-map proxy; a persistent CTA's claims often
// stay in one sequence (its heads' tiles come one after another), and those reuse the set.
struct SeqMapSets {
  int seq = -1;   // the sequence whose maps `set` holds (-1: none yet)
  u32 set = 0;

  // The set with sequence `batch`'s maps (s), made now (by the leader) if it is not the last one made.
  __device__ __forceinline__ u32 of(const FwdParams& p, int batch, const Seq& s, bool leader) {
    if (batch != seq) {
      seq = batch;
      set ^= 1u;
      if (leader) make_seq_maps(p, s, set);
    }
    return set;
  }
};

// Threads at the hand-off barriers: every consumer thread and the producer warp (kTileEmpty); one
// consumer warpgroup and the producer warp (kTileFullWg0 + w).
constexpr u32 kTileEmptyThreads = kConsumerWarps * 32 + 32;
constexpr u32 kTileFullThreads = kWarpgroupThreads + 32;

__device__ __forceinline__ u32 tile_full_bar(int wg) {
  return static_cast<u32>(NamedBarrier::kTileFullWg0) + static_cast<u32>(wg);
}

__device__ __forceinline__ bool dynamic_tiles(const FwdParams& p) {
  return kVarlenTiles || (kDynamicTiles && static_cast<int>(gridDim.x) < p.num_tiles);
}

// Sum of `v` over the lanes below this one (a scan in five shuffles; the whole warp takes part).
__device__ __forceinline__ int warp_exclusive_sum(int v) {
  int sum = v;
#pragma unroll
  for (int delta = 1; delta < 32; delta *= 2) {
    const int below = warp::shfl_up(sum, delta);
    if (static_cast<int>(threadIdx.x % 32) >= delta) sum += below;
  }
  return sum - v;
}

// kVarlen: the number of sequences (the padded tile count is num_m_blocks * Hq * B; not kSplit).
__device__ __forceinline__ int num_seqs(const FwdParams& p) {
  return p.num_tiles / (p.num_m_blocks * p.num_heads_q);
}

// kVarlenTiles: claims [base, base + count) are sequence `seq`'s tiles. Kept by the producer warp
// (every lane the same) and only moved forward: a CTA's claims increase.
struct SeqCursor {
  int seq = -1;
  int base = 0;
  int count = 0;
};

// Every lane of the producer warp: the index tile_of() reads (every sequence padded to
// p.num_m_blocks) of claim `claim` in the numbering of real tiles: sequence by sequence, within a
// sequence head by head, each head's query blocks in order; p.num_tiles once the claim is past the
// last sequence. With a causal mask and p.lpt_heads a sequence's tiles go longest first within groups
// of its heads (launch_order.cuh, as tile_of orders fixed lengths): head by head, a batch's last
// claims held its last sequence's last heads' longest tiles, which ran on alone. The lanes count the
// tiles of 32 sequences at a time and a prefix sum finds the claim's. A length past max_seqlen_q
// (malformed) counts p.num_m_blocks blocks, as a padded launch would run.
__device__ __forceinline__ int varlen_tile(const FwdParams& p, SeqCursor& c, int claim) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int seqs = num_seqs(p);
  while (claim >= c.base + c.count) {
    const int first = c.seq + 1;
    if (first >= seqs) return p.num_tiles;
    const int b = first + lane;
    const int n = b < seqs ? min((seq_of(p, b).seqlen_q + kBlockM - 1) / kBlockM, p.num_m_blocks) * p.num_heads_q : 0;
    const int before = warp_exclusive_sum(n);
    const int start = c.base + c.count;
    const u32 hit = warp::ballot(start + before + n > claim);
    const int l = hit != 0 ? __ffs(hit) - 1 : 31;   // none: past these 32, whose last one the cursor takes
    c.seq = first + l;
    c.base = start + __shfl_sync(0xffffffffu, before, l);
    c.count = __shfl_sync(0xffffffffu, n, l);
  }
  const int blocks = c.count / p.num_heads_q;
  const unsigned group = kIsCausal ? static_cast<unsigned>(p.lpt_heads) : 0u;
  const LaunchSlot s = launch_slot(static_cast<unsigned>(claim - c.base), static_cast<unsigned>(blocks),
                                   static_cast<unsigned>(p.num_heads_q), group);
  const int head = static_cast<int>(s.pair);
  const int j = static_cast<int>(s.tile);   // 0: the sequence's longest tile with a causal mask
  const int m_block = kIsCausal ? blocks - 1 - j : j;
  const int m_rev = kIsCausal ? p.num_m_blocks - 1 - m_block : m_block;
  return (c.seq * p.num_heads_q + head) * p.num_m_blocks + m_rev;
}

// Producer warp (every lane; `leader` writes): hand `next` to the consumers. `handoffs` counts the
// hand-offs so far; each after the first waits until the consumers have read the previous one.
__device__ __forceinline__ int producer_handoff(const FwdParams& p, int next, int& handoffs, bool leader) {
  if (handoffs > 0) named_barrier::sync(static_cast<u32>(NamedBarrier::kTileEmpty), kTileEmptyThreads);
  if (leader) gmem::st_relaxed_cta(p.tile_sched + 1 + blockIdx.x, next);
#pragma unroll
  for (int w = 0; w < kConsumerWarpgroups; ++w) named_barrier::arrive(tile_full_bar(w), kTileFullThreads);
  ++handoffs;
  return next;
}

// Producer warp: the CTA's first tile (kVarlenTiles: handed over like the rest).
__device__ __forceinline__ int producer_first_tile(const FwdParams& p, SeqCursor& c, int& handoffs, bool leader) {
  if constexpr (kVarlenTiles) {
    return producer_handoff(p, varlen_tile(p, c, static_cast<int>(blockIdx.x)), handoffs, leader);
  } else {
    return static_cast<int>(blockIdx.x);
  }
}

// Producer warp: the tile after `idx`.
__device__ __forceinline__ int producer_next_tile(const FwdParams& p, int idx, SeqCursor& c, int& handoffs,
                                                  bool leader) {
  if (!dynamic_tiles(p)) return idx + gridDim.x;
  int claim = 0;
  if (leader) claim = static_cast<int>(gridDim.x) + atomicAdd(p.tile_sched, 1);
  claim = __shfl_sync(0xffffffffu, claim, 0);
  return producer_handoff(p, kVarlenTiles ? varlen_tile(p, c, claim) : claim, handoffs, leader);
}

// Consumer thread of warpgroup `wg`: the tile the producer handed over.
__device__ __forceinline__ int consumer_take_tile(const FwdParams& p, int wg) {
  named_barrier::sync(tile_full_bar(wg), kTileFullThreads);
  const int next = gmem::ld_relaxed_cta(p.tile_sched + 1 + blockIdx.x);
  if (next < p.num_tiles) named_barrier::arrive(static_cast<u32>(NamedBarrier::kTileEmpty), kTileEmptyThreads);
  return next;
}

__device__ __forceinline__ int consumer_first_tile(const FwdParams& p, int wg) {
  return kVarlenTiles ? consumer_take_tile(p, wg) : static_cast<int>(blockIdx.x);
}

// Consumer thread of warpgroup `wg`: the tile after `idx`.
__device__ __forceinline__ int consumer_next_tile(const FwdParams& p, int idx, int wg) {
  return dynamic_tiles(p) ? consumer_take_tile(p, wg) : idx + static_cast<int>(gridDim.x);
}

}}  // namespace fa3lite::attn
