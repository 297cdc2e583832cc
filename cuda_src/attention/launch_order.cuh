// Longest-first launch order, shared by the forward's and the backward's tile schedulers
// (scheduler.cuh tile_of, bwd_scheduler.cuh bwd_tile). A grid of `pairs` (head, batch)
// pairs x `blocks` tiles each, where a pair's tile 0 works longest, 1 next, ...: numbered pair by
// pair, the last tiles launched would include the last pair's longest, which then runs on alone
// while the other SMs idle. So the pairs go in groups of `group` (sized by the host so that what
// every tile of a pair reads fits in L2 for the whole group), and within a group every pair's tile
// 0 comes first, then every tile 1, ...: the grid ends on short tiles.
#pragma once
#include "../ptx/types.cuh"

namespace fa3lite { namespace attn {

struct LaunchSlot {
  unsigned tile;   // the pair's tile, 0 = its longest
  unsigned pair;   // (head, batch) pair
};

__device__ __forceinline__ LaunchSlot longest_first(unsigned idx, unsigned blocks, unsigned pairs, unsigned group) {
  const unsigned group_first = idx / (group * blocks) * group;   // the group's first pair
  const unsigned group_size = min(group, pairs - group_first);
  const unsigned r = idx - group_first * blocks;
  return {r / group_size, group_first + r % group_size};
}

// Tile `idx` of the grid: longest first within groups of `group` pairs, or with `group` 0 or 1 pair
// by pair (which is what a group of one pair is; the schedulers pass a compile-time 0 where the
// order cannot matter, so those kernels carry no division by the group).
__device__ __forceinline__ LaunchSlot launch_slot(unsigned idx, unsigned blocks, unsigned pairs, unsigned group) {
  if (group <= 1) return {idx % blocks, idx / blocks};
  return longest_first(idx, blocks, pairs, group);
}

}}  // namespace fa3lite::attn
