// Position in a ring of kStages shared-memory buffers: the stage index and the phase parity that
// the full/empty mbarriers of that stage are on. Producer and consumers each keep their own copy and
// advance it once per tile; they stay within one phase of each other, so parity suffices.
#pragma once

namespace fa3lite { namespace attn {

template <int kStages>
struct RingPos {
  int stage = 0;
  unsigned phase = 0;

  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

}}  // namespace fa3lite::attn
