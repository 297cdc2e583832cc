// Tile scheduler. Tiles are (query block, head, batch), numbered 0 .. num_tiles - 1 with the query
// block fastest, so tiles in flight together belong to one head and share its K/V in L2; with a
// causal mask a head's last query blocks (which see the most keys) come first, so the long tiles do
// not trail at the end. The grid is persistent: CTA b takes tiles b, b + gridDim.x, ... , so the K/V
// ring and the epilogue of one tile overlap the next tile's loads, and B * H is never limited by the
// grid's 65535 cap on y/z.
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

__device__ __forceinline__ Tile tile_at(const FwdParams& p, int idx) {
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
