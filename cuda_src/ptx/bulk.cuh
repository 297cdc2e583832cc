// 1-D bulk operations (cp.reduce.async.bulk without a tensor map): contiguous runs of bytes from
// shared to global memory, issued by one thread. Sizes and both addresses must be
// multiples of 16 bytes. One PTX instruction per function. Owner: backward kernel.
#pragma once
#include "types.cuh"

namespace fa3lite { namespace bulk {

// Element-wise f32 add of `bytes` of shared `src` into global `dst` (done at L2, atomic per element);
// completes as part of the current bulk group (tma::commit_group / tma::wait_group*).
__device__ __forceinline__ void reduce_add_f32(float* dst, u32 src, u32 bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;"
               :: "l"(dst), "r"(src), "r"(bytes) : "memory");
}

}}  // namespace fa3lite::bulk
