// Backward tile scheduler: one CTA per (key block, query head, batch), flattened into blockIdx.x
// (key block fastest) so grid y/z limits never apply. Key blocks of one head are adjacent, so
// co-resident CTAs share the head's Q/dO in L2, and in deterministic mode key block n (which waits
// for key block n - 1 at every query block) is always launched after the block it waits for.
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

// With a causal mask, query block m sees key block n iff its last row i = 64m + 63 has
// 128n <= i + offset, i.e. m >= floor((128n - offset) / 64). That bound grows with n, so the key
// blocks visiting any query block form a prefix 0..n_max: the deterministic turn of block n is n.
__device__ __forceinline__ BwdTile bwd_tile_of_block(const BwdParams& p) {
  const unsigned idx = blockIdx.x;
  BwdTile t;
  t.n_block = idx % p.num_n_blocks;
  const unsigned rest = idx / p.num_n_blocks;
  t.head = rest % p.num_heads_q;
  t.batch = rest / p.num_heads_q;
  t.head_kv = t.head / p.head_group;
  t.m_end = p.num_m_blocks;
  t.m_begin = 0;
  if (kIsCausal) {
    const i64 first = static_cast<i64>(t.n_block) * kBlockN - p.causal_offset;
    if (first > 0) t.m_begin = first / kBlockM >= t.m_end ? t.m_end : static_cast<int>(first / kBlockM);
  }
  return t;
}

}}}  // namespace fa3lite::attn::bwd
