// Thread-group synchronisation, fences and register reallocation. One PTX instruction per function.
#pragma once
#include "types.cuh"

namespace fa3lite {

// Shared-window offset of a generic pointer into shared memory (what every .shared operand takes).
__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

namespace warp {

// True in exactly one lane of a fully active warp: the lane that issues single-thread work (TMA).
__device__ __forceinline__ bool elect_one() {
  u32 pred;
  asm volatile("{ .reg .pred p; elect.sync _|p, 0xffffffff;\n selp.u32 %0, 1, 0, p; }" : "=r"(pred));
  return pred != 0;
}

// True in every lane when `pred` holds in any lane of the (fully active) warp: vote.sync.any, so a
// branch on it is warp-uniform.
__device__ __forceinline__ bool any(bool pred) { return __any_sync(0xffffffffu, pred) != 0; }

// Bit l set when `pred` holds in lane l of the (fully active) warp: vote.sync.ballot.
__device__ __forceinline__ u32 ballot(bool pred) { return __ballot_sync(0xffffffffu, pred); }

// Lane l's `v` from lane l - delta (lanes below delta keep their own): shfl.sync.up.
__device__ __forceinline__ int shfl_up(int v, int delta) { return __shfl_up_sync(0xffffffffu, v, delta); }

// Lane `src`'s `v` in every lane: shfl.sync.idx.
__device__ __forceinline__ float shfl(float v, int src) { return __shfl_sync(0xffffffffu, v, src); }
__device__ __forceinline__ int shfl(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }

// Lane l's `v` from lane l ^ lane_mask: shfl.sync.bfly.
__device__ __forceinline__ u32 shfl_xor(u32 v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }

}  // namespace warp

namespace grid {

// Programmatic dependent launch (the next kernel on the stream launched with the programmatic
// stream-serialization attribute): let it be scheduled once every CTA of this grid has said so or
// exited, instead of after this grid completes. griddepcontrol.launch_dependents.
__device__ __forceinline__ void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// Wait until the grids this one depends on have completed and their memory is visible (returns at
// once in a kernel launched without such a dependency). griddepcontrol.wait.
__device__ __forceinline__ void wait_dependencies() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

// The grid's CTA count, read from %nctaid.x where it is called (mov, volatile): not hoisted into a
// register held through a loop (the backward's tile loop, in the producer warpgroup's 24 registers).
__device__ __forceinline__ unsigned ctas_here() {
  unsigned n;
  asm volatile("mov.u32 %0, %%nctaid.x;" : "=r"(n));
  return n;
}

}  // namespace grid

namespace warpgroup {

// This thread's warpgroup (threads / 128), read from lane 0 (shfl.sync) so that the compiler knows
// the value is warp-uniform and keeps what derives from it (tile addresses, wgmma descriptors) in
// uniform registers instead of recomputing it per thread and moving it over with R2UR.
__device__ __forceinline__ int index() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
}

// This thread's index in its warpgroup, read from %tid.x where it is called (mov, volatile): the
// compiler cannot hoist it, so what derives from it is not held across an enclosing loop.
__device__ __forceinline__ int thread_here() {
  unsigned t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return static_cast<int>(t % 128);
}

// Give registers back to the CTA pool (producer side). Immediate: multiple of 8 in [24, 256].
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(kRegs));
}

// Take registers from the CTA pool (consumer side); blocks until the pool can satisfy it.
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(kRegs));
}

}  // namespace warpgroup

namespace named_barrier {

// Wait until `nthreads` threads (a multiple of 32) reached barrier `id` (1..15; 0 is __syncthreads).
__device__ __forceinline__ void sync(u32 id, u32 nthreads) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(nthreads) : "memory");
}

// Count this warp towards barrier `id` without waiting.
__device__ __forceinline__ void arrive(u32 id, u32 nthreads) {
  asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(nthreads) : "memory");
}

}  // namespace named_barrier

namespace fence {

// Order this thread's generic-proxy shared-memory accesses before later async-proxy (TMA, wgmma)
// accesses of the same memory: needed after st.shared/stmatrix of data TMA stores or wgmma reads.
__device__ __forceinline__ void proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Compiler-only barrier on one register: keeps the compiler from moving accesses of a wgmma
// accumulator across the fence/commit/wait that protect it.
__device__ __forceinline__ void reg(float& r) { asm volatile("" : "+f"(r) :: "memory"); }
__device__ __forceinline__ void reg(u32& r) { asm volatile("" : "+r"(r) :: "memory"); }

}  // namespace fence

}  // namespace fa3lite
