// Values the compiler must take as they come. One PTX instruction per function.
#pragma once
#include "types.cuh"

namespace fa3lite { namespace compiler {

// The same value through a mov: the compiler no longer knows its bits (no volatile: identical ones
// still merge). Two uses, each keeping an add the compiler would otherwise rewrite:
// - a shared address: loads at opaque(a) + constant keep their adds, which ptxas folds into the load
//   (LDS [R+imm]), so a row of loads shares one register; where the compiler knew a's low bits were
//   clear it made each add an OR, which ptxas does not fold (one LOP3 per load; bwd_softmax.cuh);
// - a 64-bit wgmma descriptor: a step is one 64-bit add; seen through, the compiler split the value
//   into halves and paired them again for every wgmma (wgmma.cuh desc_sw128_at).
__device__ __forceinline__ u32 opaque(u32 x) {
  u32 y;
  asm("mov.b32 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}

__device__ __forceinline__ u64 opaque(u64 x) {
  u64 y;
  asm("mov.b64 %0, %1;" : "=l"(y) : "l"(x));
  return y;
}

}}  // namespace fa3lite::compiler
