// Producer warpgroup of the backward kernel.
//   warp 0 (one elected thread), per tile of the CTA (bwd_scheduler.cuh; once a tile's last loads
//     went out it takes the next tile's index from the counter and hands it to the other roles): K
//     and V once, then per query block m (ring stage s, round r): wait empty[s] (parity r ^ 1); arm
//     q_full[s] with the bytes of the Q tile and its lse_log2 row, load both; arm do_full[s] with the
//     bytes of the dO tile and its dPsum row, load both.
//   Q and dO have separate barriers so S^T = K Q^T can start while dO is in flight. TMA boxes that
//   reach past the sequence still deliver (and count) the full box, filled with zeros. The stats
//   rows (1-D bulk copies) are always whole: the preprocess pads them to whole query blocks.
//   With the stats in shared memory the consumers issue no global loads in their loop.
//   Tile n > 0 of a persistent CTA: its first kStages query blocks go out before K/V, into stages
//   the consumers free as they finish tile n - 1; K/V wait for kv_empty (the consumers are past
//   tile n - 1's epilogue, which stages dK/dV in sK/sV). A later block's stage frees only once the
//   consumers worked on tile n, which needs K/V: so K/V go out before it. A tile no query sees
//   (m_begin >= m_end) loads nothing, and kv_full completes its phase by a plain arrive.
#pragma once
#include "../ptx/bulk.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/tma.cuh"
#include "bwd_scheduler.cuh"
#include "bwd_smem.cuh"
#include "pipeline.cuh"
#include "tile_io.cuh"
#include "trace.cuh"

namespace fa3lite { namespace attn { namespace bwd {

// Q and dO tiles (kBlockM rows), K and V tiles (kBlockN rows), each with its own padding: tile_io.cuh.
template <int Rows, bool Padded>
__device__ __forceinline__ void load(u32 dst, const TmaDesc* map, u32 bar, int row, int head, int batch) {
  tile_io::load<Rows, kColBlocks, Padded>(dst, map, bar, row, head, batch);
}

// Tile t's loads, the CTA's n-th tile with work (a phase of kv_full / kv_empty); pos: the Q/dO ring,
// carried from tile to tile.
__device__ __forceinline__ void load_tile(const BwdParams& p, const BwdSmem& sm, const BwdTile& t, unsigned idx,
                                          int n, RingPos<kStages>& pos) {
  trace::place(idx, t.m_end - visit_first(t));
  if constexpr (kVarlen) acquire_seq_maps(p, t);
  const TmaDesc* map_q = kVarlen ? seq_map(p, t, 0) : &p.q;
  const TmaDesc* map_do = kVarlen ? seq_map(p, t, 3) : &p.dout;
  const int batch = kVarlen ? 0 : t.batch;
  const auto load_kv = [&] {
    if (n > 0) mbar::wait(sm.kv_empty(), (n - 1) & 1);
    if (t.m_begin >= t.m_end) {
      mbar::arrive(sm.kv_full());
      return;
    }
    const TmaDesc* map_k = kVarlen ? seq_map(p, t, 1) : &p.k;
    const TmaDesc* map_v = kVarlen ? seq_map(p, t, 2) : &p.v;
    mbar::arrive_expect_tx(sm.kv_full(), 2 * kKTileBytes);
    load<kBlockN, kPaddedQK>(sm.k(), map_k, sm.kv_full(), t.n_block * kBlockN, t.head_kv, batch);
    load<kBlockN, kPaddedV>(sm.v(), map_v, sm.kv_full(), t.n_block * kBlockN, t.head_kv, batch);
  };
  // Query blocks issued before K/V: none in the CTA's first tile (K is needed first), else up to
  // a ring's worth (see the top).
  const int before_kv = n == 0 ? 0 : kStages;
  int issued = 0;
  for (int head = t.head; head < t.head + tile_heads(t); ++head) {
    const i64 stat_row0 = (static_cast<i64>(t.batch) * p.num_heads_q + head) * p.num_m_blocks * kBlockM;
    for (int v = visit_first(t); v < t.m_end; ++v) {
      if (issued++ == before_kv) load_kv();
      const int m = query_block(t, v);
      const int s = pos.stage;
      const i64 stat = stat_row0 + static_cast<i64>(m) * kBlockM;
      trace::wait(idx, 2, sm.empty(s), pos.phase ^ 1u);
      mbar::arrive_expect_tx(sm.q_full(s), kQTileBytes + kStatBytes);
      load<kBlockM, kPaddedQK>(sm.q(s), map_q, sm.q_full(s), m * kBlockM, head, batch);
      bulk::load(sm.lse(s), p.lse_log2 + stat, kStatBytes, sm.q_full(s));
      mbar::arrive_expect_tx(sm.do_full(s), kQTileBytes + kStatBytes);
      load<kBlockM, kPaddedV>(sm.dout(s), map_do, sm.do_full(s), m * kBlockM, head, batch);
      bulk::load(sm.dps(s), p.dpsum + stat, kStatBytes, sm.do_full(s));
      pos.advance();
    }
  }
  if (issued <= before_kv) load_kv();   // the tile had no more query blocks than went before K/V
}

__device__ __forceinline__ void bwd_producer(const BwdParams& p, const BwdSmem& sm) {
  // Maps and batch coordinate: the tensors' own, or kVarlen the sequence's (batch 0), which the
  // preprocess built.
  if constexpr (!kVarlen) {
    tma::prefetch_desc(&p.q);
    tma::prefetch_desc(&p.k);
    tma::prefetch_desc(&p.v);
    tma::prefetch_desc(&p.dout);
  }
  RingPos<kStages> pos;
  int n = 0, k = 0;
  for (int idx = blockIdx.x; idx < p.num_tiles; idx = static_cast<int>(smem::ld_u32(sm.sched(k++ & 1)))) {
    const BwdTile t = bwd_tile(p, idx);
    // A kVarlen key block past its sequence's keys has no work (bwd_scheduler.cuh for_each_tile).
    if (!(kVarlen && t.n_block >= t.n_blocks)) load_tile(p, sm, t, static_cast<unsigned>(idx), n++, pos);
    if (!kPersistent) break;
    publish_next_tile(p, sm, k);   // read back above: the producer's own store, no wait needed
  }
}

}}}  // namespace fa3lite::attn::bwd
