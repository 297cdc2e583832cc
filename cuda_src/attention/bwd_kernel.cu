// Backward attention entry: shared-memory plan, barrier init, role dispatch. Nothing else.
//   warpgroup 0, warp 0   producer: TMA loads of K/V once and the Q/dO/LSE/dPsum ring (bwd_producer.cuh)
//   warpgroup 0, warps 1-2  dQ writers (D <= 128, variants with dQ), one per dQ buffer: bulk
//                         reduce-add of each dQ tile into the f32 accumulator; D = 256,
//                         deterministic: turn keepers, one per consumer warpgroup (bwd_dq.cuh)
//   warpgroups 1, 2       consumers: dK/dV in registers, dQ per query block (bwd_consumer.cuh for
//                         D <= 128, bwd_consumer_wide.cuh for D = 256; see bwd_config.cuh)
// Every role walks the CTA's tiles (bwd_scheduler.cuh for_each_tile): one, or in a persistent grid
// several, with the Q/dO ring and the barriers' phases carried from tile to tile.
#include "bwd_consumer.cuh"
#include "bwd_consumer_wide.cuh"
#include "bwd_dq.cuh"
#include "bwd_producer.cuh"
#include "trace.cuh"

using namespace fa3lite;
using namespace fa3lite::attn;
using namespace fa3lite::attn::bwd;

extern "C" __global__ void __launch_bounds__(kThreads, 1) fa3lite_bwd(const __grid_constant__ BwdParams p) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const BwdSmem sm{(smem_addr(smem_raw) + kSmemAlign - 1) & ~static_cast<u32>(kSmemAlign - 1)};
  // Each role walks the CTA's tiles after its register move (setmaxnreg), not here: values made
  // before the split live across it, into the producer warpgroup's 24 registers, and NVRTC 13.5
  // spilled two of them at D = 256 causal (13.0 did not). kVarlen: the grid pads every sequence to
  // max_seqlen_k; a key block past its sequence's keys has nothing to compute or write. With one tile
  // per CTA its CTA leaves before the set-up (an SM runs one CTA at a time); persistent CTAs skip such
  // tiles in their walk (bwd_scheduler.cuh for_each_tile).
#ifdef FA3LITE_DEBUG
  // One CTA per tile wherever a CTA takes one tile only, and under deterministic turns, which may
  // wait for a tile launched later (fa3lite/hopper/bwd.py main_ctas).
  if ((!kPersistent || p.deterministic) && gridDim.x != static_cast<unsigned>(p.num_tiles)) __trap();
#endif
  if constexpr (kVarlen && !kPersistent) {
    const BwdTile t = bwd_tile(p, blockIdx.x);
    if (t.n_block >= t.n_blocks) return;
  }
  const int wg = warpgroup::index();

  if (threadIdx.x == 0) {
    mbar::init(sm.kv_full(), 1);
    mbar::init(sm.kv_empty(), kConsumerThreads);
    for (int i = 0; i < 2; ++i) {
      mbar::init(sm.sched_full(i), 1);
      mbar::init(sm.sched_empty(i), kSchedReaders);
    }
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
    const int warp = threadIdx.x / 32;
    if (warp == 0) {
      if (warp::elect_one()) bwd_producer(p, sm);
    } else if constexpr (kNeedDq && kDqViaSmem) {
      if (warp == 1) {   // warps 1, 2: one per dQ buffer
        bwd_dq_writer<0>(p, sm);
      } else if (warp == 2 && kDqBuffers == 2) {
        bwd_dq_writer<1>(p, sm);
      }
    } else if constexpr (kNeedDq) {
      // tile blockIdx.x alone (bwd_dq.cuh); kVarlen: one with keys (above)
      const BwdTile t = bwd_tile(p, blockIdx.x);
      if (p.deterministic && warp <= kConsumerWarpgroups) bwd_dq_turn_keeper(p, t, warp - 1);
    }
  } else {
    warpgroup::setmaxnreg_inc<kConsumerRegs>();
    const int tid = threadIdx.x % kWarpgroupThreads;
    RingPos<kStages> pos;
    for_each_tile(p, sm, [&](const BwdTile& t, unsigned idx, int n) {
      if (wg == 1 && tid == 0) trace::mark(idx, 1);
      if constexpr (kWide) {
        bwd_consumer_wide(p, sm, t, wg - 1, tid, pos, n);
      } else {
        bwd_consumer(p, sm, t, wg - 1, tid, pos, n, idx);
      }
      if (tid == 0) trace::mark(idx, wg == 1 ? 4 : 7);
    });
    if constexpr (kNeedDq && kDqViaSmem) {
      if (wg == 1) {
        drain_dq_buffers<0>();
      } else {
        drain_dq_buffers<1>();
      }
    }
  }
}
