// Forward attention entry: shared-memory plan, barrier init, role dispatch. Nothing else.
//   warpgroup 0          producer: TMA loads of Q and the K/V ring (fwd_producer.cuh)
//   warpgroups 1..       consumers: 64 query rows each, S = QK^T, softmax, O += PV, epilogue
// Both roles walk the same tiles (scheduler.cuh) and keep their ring positions across tiles.
#include "fwd_consumer.cuh"
#include "fwd_producer.cuh"
#include "trace.cuh"

using namespace fa3lite;
using namespace fa3lite::attn;

extern "C" __global__ void __launch_bounds__(kThreads, 1) fa3lite_fwd(const __grid_constant__ FwdParams p) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const FwdSmem sm{(smem_addr(smem_raw) + kSmemAlign - 1) & ~static_cast<u32>(kSmemAlign - 1)};
  const int wg = warpgroup::index();

  if (threadIdx.x == 0) {
    trace::mark(blockIdx.x, 5);   // the CTA's start, recorded under its first tile
    // kSplit: the combine (a dependent launch) may be scheduled once every CTA of this grid has
    // started; it waits for this grid's results itself (combine.cu), holding no SM one of these needs.
    if constexpr (kSplit) grid::launch_dependents();
    for (int s = 0; s < kQStages; ++s) {
      mbar::init(sm.q_full(s), 1);
      mbar::init(sm.q_empty(s), kQEmptyArrivals);
    }
    for (int s = 0; s < kStages; ++s) {
      mbar::init(sm.k_full(s), 1);
      mbar::init(sm.v_full(s), 1);
      mbar::init(sm.k_empty(s), kConsumerWarps);
      mbar::init(sm.v_empty(s), kConsumerWarps);
    }
    mbar::fence_init();
  }
  __syncthreads();

  if (wg == 0) {
    warpgroup::setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x / 32 == 0) fwd_producer(p, sm, threadIdx.x % 32 == 0);
  } else {
    warpgroup::setmaxnreg_inc<kConsumerRegs>();
    fwd_consumer(p, sm, wg - 1, threadIdx.x % kWarpgroupThreads);
  }
}
