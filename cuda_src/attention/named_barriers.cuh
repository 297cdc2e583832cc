// Named barrier ids (0 is __syncthreads). Compile-time constants keep ptxas' barrier count low.
#pragma once

namespace fa3lite { namespace attn {

enum class NamedBarrier : unsigned {
  kEpilogueWg0 = 1,   // the 128 threads of consumer warpgroup 0 before its TMA store of O
  kEpilogueWg1 = 2,
};

}}  // namespace fa3lite::attn
