// Tile scheduler: tiles are (query block, head, batch), flattened into one index so the grid is
// never limited by the 65535 cap on grid y/z (B * H can be anything). Query blocks of one head are
// adjacent, so CTAs running together share K/V in L2. With a causal mask the last query blocks see
// the most keys: they come first so the long tiles do not trail at the end of the grid.
// A CTA takes tiles blockIdx.x, blockIdx.x + gridDim.x, ...: with one CTA per tile that is one tile;
// a kPersistent variant may run on a persistent grid (one CTA per SM, chosen by the host), where the
// producer loads the next tile's K/V and Q while the consumers finish the current one, hiding the
// per-tile start-up (first loads, pipeline fill) and the epilogue.
#pragma once
#include "config.cuh"
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

// Key blocks [0, n_block_end) hold every key some valid row of query block m can see.
__device__ __forceinline__ int n_block_end(const FwdParams& p, int m_block) {
  int keys = p.seqlen_k;
  if (kIsCausal) {
    const int last_row = min((m_block + 1) * kBlockM, p.seqlen_q) - 1;
    keys = min(keys, last_row + p.causal_offset + 1);
  }
  return keys <= 0 ? 0 : (keys + kBlockN - 1) / kBlockN;
}

}}  // namespace fa3lite::attn
