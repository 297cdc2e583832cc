// Plain shared-memory accesses by shared-window address. One PTX instruction per function.
#pragma once
#include "types.cuh"

namespace fa3lite { namespace smem {

// Store 4 bytes (e.g. a packed bf16x2 pair) at a shared-window address.
__device__ __forceinline__ void st_u32(u32 addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}

// Load 4 bytes from a shared-window address.
__device__ __forceinline__ u32 ld_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// Load 16 bytes from a 16-byte aligned shared-window address.
__device__ __forceinline__ uint4 ld_v4(u32 addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
  return v;
}

// Store four 8x8 16-bit matrices from the mma fragment layout: lane 8q+k gives the address of row k of
// matrix q; register r_q holds matrix q's row lane/4, columns 2*(lane%4), +1.
__device__ __forceinline__ void stmatrix_x4(u32 addr, u32 r0, u32 r1, u32 r2, u32 r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
               :: "r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

}}  // namespace fa3lite::smem
