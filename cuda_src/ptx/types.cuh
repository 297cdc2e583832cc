// Basic types for NVRTC builds: no toolkit headers are available at run time, so the kernels
// declare the few types they need themselves.
#pragma once

namespace fa3lite {

typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned short u16;

// 16-bit storage types; arithmetic happens in f32 after a cvt (see math.cuh).
struct bf16_t { u16 bits; };
struct f16_t { u16 bits; };

// CUtensorMap is 128 opaque bytes that must be 64-byte aligned; passed by value as a
// `const __grid_constant__` kernel parameter so its address is a valid generic pointer for TMA.
struct alignas(64) TmaDesc { u64 opaque[16]; };

}  // namespace fa3lite
