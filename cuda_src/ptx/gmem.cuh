// Global-memory synchronisation: between CTAs (the backward's deterministic dQ semaphore) and inside
// one (the forward's tile hand-off). One PTX instruction per function.
#pragma once
#include "types.cuh"

namespace fa3lite { namespace gmem {

// Read a flag with acquire semantics at GPU scope: later accesses of this thread see everything
// the releasing thread published before its release.
__device__ __forceinline__ i32 ld_acquire(const i32* p) {
  i32 v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Plain CTA-scope accesses of a word other threads of the CTA read or write; a barrier orders them.
__device__ __forceinline__ i32 ld_relaxed_cta(const i32* p) {
  i32 v;
  asm volatile("ld.relaxed.cta.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed_cta(i32* p, i32 v) {
  asm volatile("st.relaxed.cta.global.b32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

// Atomically add to a counter with acquire semantics at GPU scope and return its old value: a ticket
// that also reads a flag other threads released into the same word.
__device__ __forceinline__ i32 atom_acquire_add(i32* p, i32 v) {
  i32 old;
  asm volatile("atom.acquire.gpu.global.add.s32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
// Atomically add to a counter (relaxed, GPU scope) and return its old value: a ticket that orders
// nothing else.
__device__ __forceinline__ i32 atom_relaxed_add(i32* p, i32 v) {
  i32 old;
  asm volatile("atom.relaxed.gpu.global.add.s32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// Atomically add to a flag with release semantics at GPU scope (publishes this thread's prior writes).
__device__ __forceinline__ void red_release_add(i32* p, i32 v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

// Order this thread's prior memory accesses before its later ones for every observer, the host
// included (writes to mapped host memory). fence.sc.sys.
__device__ __forceinline__ void fence_system() { asm volatile("fence.sc.sys;" ::: "memory"); }

// Order this thread's async-proxy global accesses (bulk copies/reductions) with its generic-proxy ones.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// Atomically add 4 consecutive f32 (16-byte aligned) in one vector reduction at L2.
__device__ __forceinline__ void red_add_v4_f32(float* p, float a, float b, float c, float d) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// Store 4 consecutive f32 at a 16-byte aligned global address (the vector reduction's plain twin).
__device__ __forceinline__ void st_v4_f32(float* p, float a, float b, float c, float d) {
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// Store two consecutive f32 at an 8-byte aligned global address.
__device__ __forceinline__ void st_v2_f32(float* p, float a, float b) {
  asm volatile("st.global.v2.f32 [%0], {%1, %2};" :: "l"(p), "f"(a), "f"(b) : "memory");
}

// Store 16 bytes at a 16-byte aligned global address.
__device__ __forceinline__ void st_v4(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

}}  // namespace fa3lite::gmem
