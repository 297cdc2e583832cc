// Backward attention entry: shared-memory plan, barrier init, role dispatch. Nothing else.
//   warpgroup 0, warp 0   producer: TMA loads of K/V once and the Q/dO/LSE/dPsum ring (bwd_producer.cuh)
//   warpgroup 0, warps 1-2  dQ writers (D <= 128, variants with dQ), one per dQ buffer: bulk
//                         reduce-add of each dQ tile into the f32 accumulator; D = 256,
//                         deterministic: turn keepers, one per consumer warpgroup (bwd_dq.cuh)
//   warpgroups 1, 2       consumers: dK/dV in registers, dQ per query block (bwd_consumer.cuh for
//                         D <= 128, bwd_consumer_wide.cuh for D = 256; see bwd_config.cuh)
#include "bwd_consumer.cuh"
#include "bwd_consumer_wide.cuh"
#include "bwd_dq.cuh"
#include "bwd_producer.cuh"
#include "trace.cuh"

using namespace fa3lite;
using namespace fa3lite::attn::bwd;

extern "C" __global__ void __launch_bounds__(kThreads, 1) fa3lite_bwd(const __grid_constant__ BwdParams p) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const BwdSmem sm{(smem_addr(smem_raw) + kSmemAlign - 1) & ~static_cast<u32>(kSmemAlign - 1)};
  // Each role makes its tile after its register move (setmaxnreg), not here: values made before the
  // split live across it, into the producer warpgroup's 24 registers, and NVRTC 13.5 spilled two of
  // them at D = 256 causal (13.0 did not). kVarlen: the grid pads every sequence to max_seqlen_k; a
  // key block past its sequence's keys has nothing to compute or write, and leaves before the set-up
  // (an SM runs one CTA at a time).
  if (kVarlen) {
    const BwdTile t = bwd_tile_of_block(p);
    if (t.n_block >= t.n_blocks) return;
  }
  const int wg = warpgroup::index();

  if (threadIdx.x == 0) {
    trace::mark(blockIdx.x, 1);
    const BwdTile t = bwd_tile_of_block(p);   // dead code unless FA3LITE_TRACE (trace.cuh)
    trace::place(blockIdx.x, t.m_end - visit_first(t));
    mbar::init(sm.kv_full(), 1);
    for (int s = 0; s < kStages; ++s) {
      mbar::init(sm.q_full(s), 1);
      mbar::init(sm.do_full(s), 1);
      mbar::init(sm.empty(s), kConsumerThreads);
    }
    mbar::fence_init();
  }
  __syncthreads();

  if (wg == 0) {
    warpgroup::setmaxnreg_dec<kProducerRegs>();
    const BwdTile t = bwd_tile_of_block(p);
    const int warp = threadIdx.x / 32;
    if (warp == 0) {
      if (warp::elect_one()) bwd_producer(p, sm, t);
    } else if constexpr (kNeedDq && kDqViaSmem) {
      if (warp == 1) {   // warps 1, 2: one per dQ buffer
        bwd_dq_writer<0>(p, sm, t);
        if (threadIdx.x % 32 == 0) trace::mark(blockIdx.x, 5);
      } else if (warp == 2 && kDqBuffers == 2) {
        bwd_dq_writer<1>(p, sm, t);
      }
    } else if constexpr (kNeedDq) {
      if (p.deterministic && warp <= kConsumerWarpgroups) bwd_dq_turn_keeper(p, t, warp - 1);
    }
  } else {
    warpgroup::setmaxnreg_inc<kConsumerRegs>();
    const BwdTile t = bwd_tile_of_block(p);
    if constexpr (kWide) {
      bwd_consumer_wide(p, sm, t, wg - 1, threadIdx.x % kWarpgroupThreads);
    } else {
      bwd_consumer(p, sm, t, wg - 1, threadIdx.x % kWarpgroupThreads);
    }
    if (threadIdx.x % kWarpgroupThreads == 0) trace::mark(blockIdx.x, wg == 1 ? 4 : 7);
  }
}
