// Element type and head dims of one kernel variant, shared by the forward (config.cuh) and backward
// (bwd_config.cuh) configurations. The host passes the macros (fa3lite/variants.py, hopper/bwd.py).
#pragma once
#include "../ptx/types.cuh"

#ifndef FA3LITE_HEAD_DIM
#error "FA3LITE_HEAD_DIM must be defined by the host"
#endif

namespace fa3lite { namespace attn {

#if FA3LITE_DTYPE_BF16
using Element = bf16_t;
#else
using Element = f16_t;
#endif

constexpr int kHeadDim = FA3LITE_HEAD_DIM;   // the kernel's (a multiple of 64)
// The tensors' head dims: Q and K's (kHeadDimReal), V and O's (kHeadDimVReal). Each is kHeadDim or
// runs padded to it (96 / 192 in 128 / 256; V's 128 beside Q/K's 192 in 256): tile_io.cuh.
#ifdef FA3LITE_HEAD_DIM_REAL
constexpr int kHeadDimReal = FA3LITE_HEAD_DIM_REAL;
#else
constexpr int kHeadDimReal = kHeadDim;
#endif
#ifdef FA3LITE_HEAD_DIM_V_REAL
constexpr int kHeadDimVReal = FA3LITE_HEAD_DIM_V_REAL;
#else
constexpr int kHeadDimVReal = kHeadDimReal;
#endif
constexpr bool kPaddedQK = kHeadDimReal != kHeadDim;
constexpr bool kPaddedV = kHeadDimVReal != kHeadDim;
static_assert(kHeadDimReal <= kHeadDim && kHeadDim - kHeadDimReal <= 64 && kHeadDimReal % 8 == 0,
              "a padded Q/K head dim leaves at most one 64-column block of padding, in 16-byte steps");
static_assert(kHeadDimVReal <= kHeadDim && kHeadDimVReal > 0 && kHeadDimVReal % 8 == 0,
              "V's head dim fits the kernel's, in 16-byte steps");

}}  // namespace fa3lite::attn
