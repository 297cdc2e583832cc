// 1-D bulk operations (cp.async.bulk / cp.reduce.async.bulk without a tensor map): contiguous runs of
// bytes between global and shared memory, issued by one thread. Sizes and both addresses must be
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

// Copy `bytes` of shared `src` to global `dst`; completes as part of the current bulk group.
__device__ __forceinline__ void store(void* dst, u32 src, u32 bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
               :: "l"(dst), "r"(src), "r"(bytes) : "memory");
}
// Copy `bytes` from global `src` into shared `dst`; completion adds the bytes to mbarrier `bar`'s
// transaction count (arm it with arrive_expect_tx first).
__device__ __forceinline__ void load(u32 dst, const void* src, u32 bytes, u32 bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

}}  // namespace fa3lite::bulk
