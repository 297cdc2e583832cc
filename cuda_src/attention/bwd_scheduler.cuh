// Backward tile scheduler: one CTA per (key block, query head, batch), flattened into blockIdx.x
// (key block fastest) so grid y/z limits never apply. Key blocks of one head are adjacent, so
// co-resident CTAs share the head's Q/dO in L2.
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
#pragma once
#include "bwd_config.cuh"
#include "bwd_params.cuh"

namespace fa3lite { namespace attn { namespace bwd {

struct BwdTile {
  int n_block;
  int head;       // query head
  int head_kv;    // the K/V head it reads
  int batch;
  int m_begin;    // query blocks [m_begin, m_end) can see some key of this block
  int m_end;
};

// Causal order reverses the key blocks of a head in deterministic mode (see the top).
__device__ __forceinline__ bool descending_turns(const BwdParams& p) { return kIsCausal && p.deterministic; }

// With a causal mask, query block m sees key block n iff its last row i = 64m + 63 has
// 128n <= i + offset, i.e. m >= floor((128n - offset) / 64). That bound grows with n, so the key
// blocks visiting any query block form a prefix 0..n_last(m). A window's lower edge also ends the
// query blocks of key block n (m_end) and starts the key blocks of query block m at some n_first(m)
// that grows with m, so those form a range n_first(m)..n_last(m): the turns below hold as they are
// (the highest block visiting m is still n_last(m), and the blocks below it down to n_first(m) come
// in descending order).
__device__ __forceinline__ BwdTile bwd_tile_of_block(const BwdParams& p) {
  const unsigned idx = blockIdx.x;
  BwdTile t;
  const int slot = idx % p.num_n_blocks;
  t.n_block = descending_turns(p) ? p.num_n_blocks - 1 - slot : slot;
  const unsigned rest = idx / p.num_n_blocks;
  t.head = rest % p.num_heads_q;
  t.batch = rest / p.num_heads_q;
  t.head_kv = t.head / p.head_group;
  t.m_end = p.num_m_blocks;
  t.m_begin = 0;
  if (kIsCausal) {
    const i64 first = static_cast<i64>(t.n_block) * kBlockN - p.causal_offset;
    if (first > 0) t.m_begin = first / kBlockM >= t.m_end ? t.m_end : static_cast<int>(first / kBlockM);
    // A window's lower edge: the last query that sees the block's last key j is j - local_offset.
    const i64 last_key = min((t.n_block + 1) * kBlockN, p.seqlen_k) - 1;
    const i64 last = last_key - p.local_offset;
    if (last < 0) {
      t.m_end = 0;
    } else if (last / kBlockM + 1 < t.m_end) {
      t.m_end = static_cast<int>(last / kBlockM + 1);
    }
  }
  return t;
}

// Deterministic mode: how many key blocks add their dQ tile of query block m before this one. Full
// mask: every block visits m, in order 0, 1, ...: the turn is n. Causal: blocks 0..n_last(m) visit m
// (the prefix above), in descending order: the turn is n_last(m) - n. Called only for m >= m_begin,
// where the last visible key 64m + 63 + offset >= 128n >= 0.
__device__ __forceinline__ int dq_turn(const BwdParams& p, const BwdTile& t, int m) {
  if (!descending_turns(p)) return t.n_block;
  const i64 last_key = static_cast<i64>(m) * kBlockM + kBlockM - 1 + p.causal_offset;
  const i64 n_last = last_key / kBlockN;
  return static_cast<int>(n_last < p.num_n_blocks - 1 ? n_last : p.num_n_blocks - 1) - t.n_block;
}

}}}  // namespace fa3lite::attn::bwd
