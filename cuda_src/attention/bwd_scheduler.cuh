// Backward tile scheduler: one tile per (key block, query head, batch), flattened into one index
// so grid y/z limits never apply. The host launches one CTA per tile, or for kPersistent variants
// (bwd_config.cuh) without deterministic turns at most one per SM (fa3lite/hopper/bwd.py main_ctas).
// There CTA c takes tile c first, then whichever tile comes next in the order below when it asks:
// gridDim.x + a ticket from p.tile_counter, as the hardware hands out CTAs, so a long causal tile
// holds up only the CTA that has it (a static stride, tiles c, c + grid, ..., ran d = 128 causal 1k
// 47% slower: benchmarks/RESULTS.md section 53). A persistent CTA loads its next tile's first Q/dO
// while it finishes the tile before.
// The producer asks once it issued a tile's last loads and hands the answer to the other roles
// through shared memory (publish_next_tile / for_each_tile below).
// GQA with p.cta_heads = the group (kWalkHeads variants, where the grid stays large enough: bwd.py
// grouped_heads): one tile per (key block, K/V head, batch), which
// walks every query head of the group in turn and sums their dK/dV in registers -- no f32 dK/dV per
// query head for the host to sum (that traffic cost GQA's backward 5-33%, RESULTS section 38). A
// tile's visits are then its query blocks for its first head, the same blocks for the next, ...
// Key blocks of one head (pair) are adjacent (key block fastest), so co-resident CTAs share the
// head's Q/dO in L2 -- except with p.lpt_heads (causal masks, not deterministic): key block n sees
// the query blocks from about n on, so block 0 works longest, and launched head by head the last
// wave would hold long CTAs that run on alone while the other SMs idle. Within groups of lpt_heads
// heads (their Q, dO and dQ rows fit in L2 together; the host sizes the group) every head's block 0
// goes first, then every block 1, ...: the last CTAs are short. Varlen takes the same order over its
// (head, sequence) pairs: by block index, so not strictly longest first where lengths differ.
//
// Deterministic mode adds each query block's dQ tiles in a fixed key-block order (dq_turn), and a
// key block only ever waits for blocks launched before it (so for blocks that are resident or done:
// no deadlock, whatever the grid). The order is chosen so that nobody waits for long:
//   full mask: ascending n, launched ascending. All blocks walk m = 0, 1, ... in step, so block n
//              trails block n - 1 by one reduction and then runs unhindered.
//   causal:    descending n, launched descending. Block n starts at query block ~2n (it sees nothing
//              earlier), so at any query block m the higher key block got there first: with
//              ascending order every block would wait out its whole head start, idle for about as
//              long as it works; with descending order it never waits.
//   full mask, p.deterministic == kRotatedTurns (the host's choice when a sequence's key blocks fit
//              on half the SMs: bwd.py turn_order): key block n walks the query blocks from n mod M on, wrapping
//              around, and each query block takes its adds in the order the blocks arrive (by step,
//              then by n). In step, the blocks of a head add into different query blocks and none
//              waits; in ascending order block n first waited out n reductions, which at short
//              sequences was 10-20% of the backward. A block now also waits for blocks launched
//              after it, which is deadlock-free because all of a sequence's key blocks can be
//              resident together (the host's condition) and the blocks of earlier sequences and
//              heads finish without them. Not for D = 64 with softcap (bwd_config.cuh).
// Without turns a full mask may be walked rotated too (p.rotated_walk: the host's choice for
// 128-query steps over few query blocks, bwd.py rotated_walk, whichever gradients a call computes, so
// that each gives the same dK/dV bits): with dQ claims (bwd_dq.cuh), walking in step from m = 0, every
// key block of a head would reach each query block at once, one would store its tile and the others
// wait out the store's round trip to add; rotated, a block's first visitor is there a step ahead of
// the next. Nobody waits for a block that has not started, so no residency condition applies.
#pragma once
#include "../ptx/gmem.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "bwd_config.cuh"
#include "bwd_params.cuh"
#include "bwd_smem.cuh"
#include "launch_order.cuh"
#include "tile_io.cuh"

namespace fa3lite { namespace attn { namespace bwd {

// The band of one sequence: key j is visible to query i iff j < seqlen_k and (kIsCausal)
// i + local_offset <= j <= i + causal_offset.
struct SeqMask {
  int seqlen_k;
  int causal_offset;
  int local_offset;
};

struct BwdTile {
  int n_block;
  int head;       // (first) query head
  int heads;      // query heads walked, head .. head + heads - 1 (p.cta_heads)
  int head_kv;    // the K/V head it reads
  int batch;
  int m_begin;    // query blocks [m_begin, m_end) can see some key of this block; a full mask's are
  int m_end;      // [0, m_end), visited from m_begin on (0, or with rotated turns n_block mod m_end)
  // The sequence (fixed lengths: the params'; kVarlen: from cu_seqlens / seqused)
  int q_start;    // first row in the packed tensors (0 with fixed lengths)
  int k_start;
  int seqlen_q;
  int n_blocks;   // key blocks of the sequence
  SeqMask mask;
};

// Causal order reverses the key blocks of a head in deterministic mode (see the top).
__device__ __forceinline__ bool descending_turns(const BwdParams& p) { return kIsCausal && p.deterministic; }

constexpr int kRotatedTurns = 2;   // p.deterministic's value for the rotated full-mask order (see the top)
__device__ __forceinline__ bool rotated_turns(const BwdParams& p) {
  return kRotatableTurns && p.deterministic == kRotatedTurns;
}
// Whether a full mask's key blocks walk the query blocks rotated (the turns' order, or without turns).
__device__ __forceinline__ bool rotated_visits(const BwdParams& p) {
  return kRotatableTurns && (p.deterministic == kRotatedTurns || p.rotated_walk);
}

// The visits of tile t are, per head, v = visit_first(t), ..., m_end - 1, visit v at query block
// query_block(t, v): a banded mask's [m_begin, m_end) in order (v is m), or where the turns may
// rotate (a full mask) all of [0, m_end) from m_begin on, wrapping around (v counts from 0, so the
// consumers, which need no m with a full mask, keep the loop they had).
__device__ __forceinline__ int visit_first(const BwdTile& t) { return kRotatableTurns ? 0 : t.m_begin; }

__device__ __forceinline__ int query_block(const BwdTile& t, int v) {
  if constexpr (!kRotatableTurns) return v;
  const int m = t.m_begin + v;
  return m < t.m_end ? m : m - t.m_end;
}

// Query heads tile t walks: t.heads in a walking variant (kWalkHeads), else known to be 1, so the
// loops stay those of one head.
__device__ __forceinline__ int tile_heads(const BwdTile& t) { return kWalkHeads ? t.heads : 1; }

// With a causal mask, query block m sees key block n iff its last row i = 64m + 63 has
// 128n <= i + offset, i.e. m >= floor((128n - offset) / 64). That bound grows with n, so the key
// blocks visiting any query block form a prefix 0..n_last(m). A window's lower edge also ends the
// query blocks of key block n (m_end) and starts the key blocks of query block m at some n_first(m)
// that grows with m, so those form a range n_first(m)..n_last(m): the turns below hold as they are
// (the highest block visiting m is still n_last(m), and the blocks below it down to n_first(m) come
// in descending order).
__device__ __forceinline__ BwdTile bwd_tile(const BwdParams& p, unsigned idx) {
  const unsigned blocks = p.num_n_blocks;
  BwdTile t;
  const LaunchSlot s = launch_slot(idx, blocks, static_cast<unsigned>(p.num_tiles) / blocks,
                                   static_cast<unsigned>(p.lpt_heads));
  const unsigned slot = s.tile, head_batch = s.pair;
  t.n_block = descending_turns(p) ? blocks - 1 - slot : slot;
  const int pairs_per_batch = p.num_heads_q / p.cta_heads;
  t.heads = p.cta_heads;
  t.head = head_batch % pairs_per_batch * p.cta_heads;
  t.batch = head_batch / pairs_per_batch;
  t.head_kv = t.head / p.head_group;
  if constexpr (kVarlen) {
    t.q_start = p.cu_seqlens_q[t.batch];
    t.k_start = p.cu_seqlens_k[t.batch];
    t.seqlen_q = p.seqused_q != nullptr ? p.seqused_q[t.batch] : p.cu_seqlens_q[t.batch + 1] - t.q_start;
    const int sk = p.seqused_k != nullptr ? p.seqused_k[t.batch] : p.cu_seqlens_k[t.batch + 1] - t.k_start;
    t.mask = {sk, p.causal_offset + sk - t.seqlen_q, p.local_offset + sk - t.seqlen_q};
    t.n_blocks = (sk + kBlockN - 1) / kBlockN;
  } else {
    t.q_start = t.k_start = 0;
    t.seqlen_q = p.seqlen_q;
    t.mask = {p.seqlen_k, p.causal_offset, p.local_offset};
    t.n_blocks = p.num_n_blocks;
  }
  t.m_end = (t.seqlen_q + kBlockM - 1) / kBlockM;
  t.m_begin = 0;
  if (t.n_block >= t.n_blocks) t.m_end = 0;   // kVarlen: past the sequence's keys, no work
  if (rotated_visits(p) && t.m_end > 0) t.m_begin = t.n_block % t.m_end;
  if (kIsCausal) {
    const i64 first = static_cast<i64>(t.n_block) * kBlockN - t.mask.causal_offset;
    if (first > 0) t.m_begin = first / kBlockM >= t.m_end ? t.m_end : static_cast<int>(first / kBlockM);
    // A window's lower edge: the last query that sees the block's last key j is j - local_offset.
    const i64 last_key = min((t.n_block + 1) * kBlockN, t.mask.seqlen_k) - 1;
    const i64 last = last_key - t.mask.local_offset;
    if (last < 0) {
      t.m_end = 0;
    } else if (last / kBlockM + 1 < t.m_end) {
      t.m_end = static_cast<int>(last / kBlockM + 1);
    }
  }
  return t;
}

// Hand-off of the CTA's k-th next tile (k = 0: its second), slot k % 2 of sm.sched:
//   producer: [k >= 2: wait sched_empty(k % 2), parity (k / 2 - 1) % 2] st.shared the index;
//             arrive sched_full(k % 2) (release: the store is seen by whoever completes the wait)
//   readers:  wait sched_full(k % 2), parity (k / 2) % 2; ld.shared; arrive sched_empty(k % 2):
//             every reading thread, so each read is ordered before the next store into the slot by
//             its own arrival. (With one arrival per warp after __syncwarp, racecheck flagged the
//             other lanes' reads against that store wherever nothing else lay between two stores: a
//             varlen walk over tiles with no keys, benchmarks/RESULTS.md section 55. Elsewhere the
//             consumers' kv_empty arrivals in between hid it.)
// The readers are the consumer warps and the dQ writers (kSchedReaders threads); the index past the
// last tile (>= p.num_tiles) ends every role's walk. Deterministic turns have one CTA per tile: the producer
// publishes once (the end) and the turn keepers, which walk tile blockIdx.x alone, read nothing.
constexpr u32 kSchedReaders = kConsumerThreads + ((kNeedDq && !kWide) ? 32 * kDqBuffers : 0);   // threads

__device__ __forceinline__ void publish_next_tile(const BwdParams& p, const BwdSmem& sm, int k) {
  const int next = static_cast<int>(grid::ctas_here()) + gmem::atom_relaxed_add(p.tile_counter, 1);
  if (k >= 2) mbar::wait(sm.sched_empty(k & 1), ((k >> 1) - 1) & 1);
  smem::st_u32(sm.sched(k & 1), static_cast<u32>(next));
  mbar::arrive(sm.sched_full(k & 1));
}

// A reading warp (all lanes) takes the k-th next tile.
__device__ __forceinline__ int take_next_tile(const BwdSmem& sm, int k) {
  mbar::wait(sm.sched_full(k & 1), (k >> 1) & 1);
  const int idx = static_cast<int>(smem::ld_u32(sm.sched(k & 1)));
  mbar::arrive(sm.sched_empty(k & 1));
  return idx;
}

// The CTA's tiles in order for a reading warp, f(tile, index, n) with n counting the tiles with work
// (each a phase of the kv_full / kv_empty barriers). A kVarlen tile past its sequence's keys has no
// work: every role skips it, so it takes no phase.
template <typename F>
__device__ __forceinline__ void for_each_tile(const BwdParams& p, const BwdSmem& sm, F&& f) {
  if constexpr (!kPersistent) {
    const BwdTile t = bwd_tile(p, blockIdx.x);
    if (!(kVarlen && t.n_block >= t.n_blocks)) f(t, blockIdx.x, 0);
    return;
  }
  int n = 0, k = 0;
  for (int idx = blockIdx.x; idx < p.num_tiles; idx = take_next_tile(sm, k++)) {
    const BwdTile t = bwd_tile(p, idx);
    if (!(kVarlen && t.n_block >= t.n_blocks)) f(t, static_cast<unsigned>(idx), n++);
  }
}

// Deterministic mode: how many key blocks add their dQ tile of query block m before this one. Full
// mask: every block visits m, in order 0, 1, ...: the turn is n. Causal: blocks 0..n_last(m) visit m
// (the prefix above), in descending order: the turn is n_last(m) - n. Called only for m >= m_begin,
// where the last visible key 64m + 63 + offset >= 128n >= 0.
__device__ __forceinline__ int dq_turn(const BwdParams& p, const BwdTile& t, int m) {
  if (rotated_turns(p)) {
    // Block n' reaches m at step (m - n') mod M: before n come the blocks of earlier steps -- whose
    // residues n' mod M lie in the cyclic range (n mod M, m], each residue r held by q + (r < rem)
    // blocks (N = q M + rem) -- then those of n's own step (residue) below it, n / M of them.
    const int blocks_m = t.m_end, blocks_n = t.n_blocks, a = t.m_begin;
    const int q = blocks_n / blocks_m, rem = blocks_n % blocks_m;
    const int steps = m >= a ? m - a : m - a + blocks_m;
    const int below_rem = m >= a ? max(0, min(m + 1, rem) - (a + 1)) : max(0, rem - (a + 1)) + min(m + 1, rem);
    return steps * q + below_rem + t.n_block / blocks_m;
  }
  if (!descending_turns(p)) return t.n_block;
  const i64 last_key = static_cast<i64>(m) * kBlockM + kBlockM - 1 + t.mask.causal_offset;
  const i64 n_last = last_key / kBlockN;
  return static_cast<int>(n_last < t.n_blocks - 1 ? n_last : t.n_blocks - 1) - t.n_block;
}

// kVarlen: the q, k, v, dout maps of the tile's sequence, pointed at its rows and cut at its end
// (boxes past the end arrive as zeros, never the next sequence's rows). The preprocess, which runs
// first on the stream, builds them once per sequence (bwd_preprocess.cu write_seq_maps); the thread
// that issues the copies acquires them.
__device__ __forceinline__ const TmaDesc* seq_map(const BwdParams& p, const BwdTile& t, int which) {
  return p.seq_maps + 4 * t.batch + which;
}

__device__ __forceinline__ void acquire_seq_maps(const BwdParams& p, const BwdTile& t) {
#pragma unroll
  for (int i = 0; i < 4; ++i) tma::fence_map_acquire(seq_map(p, t, i));
}

}}}  // namespace fa3lite::attn::bwd
