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

  // The position one step back (recomputed, so a caller keeps no second position live).
  __device__ __forceinline__ RingPos before() const {
    return stage == 0 ? RingPos{kStages - 1, phase ^ 1u} : RingPos{stage - 1, phase};
  }
};

}}  // namespace fa3lite::attn
