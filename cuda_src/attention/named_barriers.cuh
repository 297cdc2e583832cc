// Named barrier ids (0 is __syncthreads). Compile-time constants keep ptxas' barrier count low.
#pragma once

namespace fa3lite { namespace attn {

enum class NamedBarrier : unsigned {
  kEpilogueWg0 = 1,   // the 128 threads of consumer warpgroup w (id kEpilogueWg0 + w) before its TMA store of O
  kSchedulerWg0 = 4,  // pingpong: warpgroup w (id kSchedulerWg0 + w) may issue its next GEMMs
  kTileEmpty = 7,     // dynamic tiles: every consumer read the tile index; it may be rewritten (scheduler.cuh)
  kTileFullWg0 = 8,   // dynamic tiles: the producer warp wrote it, for warpgroup w (id kTileFullWg0 + w)
};

}}  // namespace fa3lite::attn
