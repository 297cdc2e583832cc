// Producer warpgroup of the backward kernel.
//   warp 0 (one elected thread): K and V once, then per query block m (ring stage s, round r):
//     wait empty[s] (parity r ^ 1); arm q_full[s] with Q + LSE bytes, load both;
//     arm do_full[s] with dO + dPsum bytes, load both.
//   Q and dO have separate barriers so S^T = K Q^T can start while dO is in flight. TMA boxes that
//   reach past the sequence still deliver (and count) the full box, filled with zeros.
// The LSE/dPsum rows are padded to whole query blocks by the preprocess, so their 1-D copies never
// read out of bounds.
#pragma once
#include "../ptx/bulk.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/tma.cuh"
#include "bwd_scheduler.cuh"
#include "bwd_smem.cuh"
#include "pipeline.cuh"

namespace fa3lite { namespace attn { namespace bwd {

__device__ __forceinline__ void bwd_producer(const BwdParams& p, const BwdSmem& sm, const BwdTile& t) {
  if (t.m_begin >= t.m_end) return;   // no query sees these keys: consumers write zero dK/dV, no loads
  tma::prefetch_desc(&p.q);
  tma::prefetch_desc(&p.k);
  tma::prefetch_desc(&p.v);
  tma::prefetch_desc(&p.dout);

  mbar::arrive_expect_tx(sm.kv_full(), 2 * kKTileBytes);
  tma::load_5d(sm.k(), &p.k, sm.kv_full(), 0, t.n_block * kBlockN, 0, t.head_kv, t.batch);
  tma::load_5d(sm.v(), &p.v, sm.kv_full(), 0, t.n_block * kBlockN, 0, t.head_kv, t.batch);

  const i64 stat_row0 = (static_cast<i64>(t.batch) * p.num_heads_q + t.head) * p.num_m_blocks * kBlockM;
  RingPos<kStages> pos;
  for (int m = t.m_begin; m < t.m_end; ++m) {
    const int s = pos.stage;
    const i64 stat = stat_row0 + static_cast<i64>(m) * kBlockM;
    mbar::wait(sm.empty(s), pos.phase ^ 1u);
    mbar::arrive_expect_tx(sm.q_full(s), kQTileBytes + kRowStatBytes);
    tma::load_5d(sm.q(s), &p.q, sm.q_full(s), 0, m * kBlockM, 0, t.head, t.batch);
    bulk::load(sm.lse(s), p.lse_log2 + stat, kRowStatBytes, sm.q_full(s));
    mbar::arrive_expect_tx(sm.do_full(s), kQTileBytes + kRowStatBytes);
    tma::load_5d(sm.dout(s), &p.dout, sm.do_full(s), 0, m * kBlockM, 0, t.head, t.batch);
    bulk::load(sm.dpsum(s), p.dpsum + stat, kRowStatBytes, sm.do_full(s));
    pos.advance();
  }
}

}}}  // namespace fa3lite::attn::bwd
