// Vector shared-memory accesses by shared-window address. One PTX instruction per function.
// Owner: backward kernel.
#pragma once
#include "types.cuh"

namespace fa3lite { namespace smem_vec {

// Store 16 bytes (4 f32); addr must be 16-byte aligned.
__device__ __forceinline__ void st_v4_f32(u32 addr, float a, float b, float c, float d) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// Load 8 bytes (2 f32); addr must be 8-byte aligned.
__device__ __forceinline__ void ld_v2_f32(u32 addr, float& a, float& b) {
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "r"(addr) : "memory");
}

// Store 4 bytes (a packed pair of 16-bit values); addr must be 4-byte aligned.
__device__ __forceinline__ void st_u32(u32 addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}

// Load 16 bytes; addr must be 16-byte aligned.
__device__ __forceinline__ uint4 ld_v4(u32 addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
  return v;
}

}}  // namespace fa3lite::smem_vec
