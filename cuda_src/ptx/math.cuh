// Scalar math and conversions used by the softmax and epilogues. One PTX instruction per function.
#pragma once
#include "types.cuh"

namespace fa3lite { namespace math {

constexpr float kLog2e = 1.4426950408889634f;   // natural-log units to log2 units
constexpr float kLn2 = 0.6931471805599453f;     // and back

// -infinity (no <cmath> under NVRTC): the max of an empty row and the LSE of a fully masked row.
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000u); }

// 2^x in one MUFU.EX2; flush-to-zero is harmless for softmax inputs (always <= 0 after the max).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// log2(x) in one MUFU.LG2 (used once per row for the log-sum-exp).
__device__ __forceinline__ float lg2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// tanh(x) in one MUFU.TANH (softcap: scores become c * tanh(s / c)); max relative error about 2^-11,
// well below the bf16/fp16 rounding of the scores that feed it.
__device__ __forceinline__ float tanh(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 1/x, rounded, for the final O normalisation (once per row, so the exact form costs nothing).
__device__ __forceinline__ float rcp(float x) {
  float y;
  asm("rcp.rn.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Pack two f32 into bf16x2 / f16x2 with round-to-nearest. PTX puts its first source in the
// upper half, so `hi` goes first: the lower-index element (lo) lands in the low 16 bits.
__device__ __forceinline__ u32 pack(float lo, float hi, bf16_t) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ u32 pack(float lo, float hi, f16_t) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Widen one 16-bit value to f32.
__device__ __forceinline__ float to_float(u16 v, bf16_t) {
  return __uint_as_float(static_cast<u32>(v) << 16);   // bf16 is the top half of an f32: exact
}
__device__ __forceinline__ float to_float(u16 v, f16_t) {
  float f;
  asm("{ .reg .f16 h; mov.b16 h, %1; cvt.f32.f16 %0, h; }" : "=f"(f) : "h"(v));
  return f;
}

// Butterfly exchange inside a quad of lanes (the 4 lanes that share a row of a wgmma accumulator).
__device__ __forceinline__ float shfl_xor(float v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}

// x << n with PTX's clamp: n >= 32 gives 0 (C++ leaves that shift undefined), so ~shl(~0u, n) is
// the n lowest bits for any n in [0, 32].
__device__ __forceinline__ u32 shl(u32 x, u32 n) {
  u32 y;
  asm("shl.b32 %0, %1, %2;" : "=r"(y) : "r"(x), "r"(n));
  return y;
}

}}  // namespace fa3lite::math
