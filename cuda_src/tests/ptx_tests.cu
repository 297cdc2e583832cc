// GPU unit tests of the PTX wrappers in cuda_src/ptx/: one small kernel per primitive or tight group.
// Host side: tests/test_ptx.py (it computes every expected value independently, with torch).
//
// Each kernel sits in its own `#ifdef FA3LITE_BUILD_<kernel name>` block and the host compiles one
// kernel per NVRTC run: compiles stay small, the SASS of a cubin belongs to exactly one test, and the
// parameter-layout static_assert (FA3LITE_PARAMS_SIZE / FA3LITE_PARAMS_OK from ParamStruct) refers
// to that kernel's struct only.
#include "../ptx/types.cuh"
#include "../ptx/bulk.cuh"
#include "../ptx/gmem.cuh"
#include "../ptx/math.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem.cuh"
#include "../ptx/smem_vec.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma.cuh"

using namespace fa3lite;

#ifdef FA3LITE_PARAMS_OK
#define PTX_TEST_CHECK_LAYOUT(T) static_assert(FA3LITE_PARAMS_OK, #T ": host and device disagree on the layout");
#else
#define PTX_TEST_CHECK_LAYOUT(T)
#endif
#define PTX_TEST_CHECK_PARAMS(T)                                                                    \
  static_assert(sizeof(T) == FA3LITE_PARAMS_SIZE, #T ": host and device disagree on the size"); \
  PTX_TEST_CHECK_LAYOUT(T)

namespace ptx_test {

// (Constants are enumerators: they take no storage and raise no "unused" warning in kernels that
// do not need them.)
enum : u32 {
  kSwizzleAlign = 1024,      // a 128-byte swizzle pattern repeats every 8 rows of 128 bytes
  kRowBytes = 128,           // one swizzle row: 64 16-bit or 32 f32 elements
  kPoison = 0xDEADBEEFu,     // shared-memory filler that no test writes on purpose
  kSpinLimit = 1u << 26,     // bounded global-memory spin: a protocol bug traps, never hangs
  kQuietNan = 0x7fc00000u,   // an accumulator start value that poisons any sum it enters
};
// A busy wait long enough (~10-30 us) that a reader not held back by its barrier would run first.
enum : long long { kDelayCycles = 50000 };

__device__ __forceinline__ u32 align_up(u32 x, u32 a) { return (x + a - 1) & ~(a - 1); }

// Physical byte offset of logical byte `b` inside a 1024-byte aligned 128B-swizzled tile: the 16-byte
// chunk index (bits 4-6) is XORed with the row index modulo 8 (bits 7-9).
__device__ __forceinline__ u32 swizzle128(u32 b) { return b ^ (((b >> 7) & 7u) << 4); }

__device__ __forceinline__ void delay() {
  const long long t0 = clock64();
  while (clock64() - t0 < kDelayCycles) {}
}

// Generic pointer to a shared-window address inside the dynamic shared memory block.
__device__ __forceinline__ unsigned char* generic(unsigned char* raw, u32 addr) {
  return raw + (addr - smem_addr(raw));
}

}  // namespace ptx_test

using namespace ptx_test;

extern __shared__ __align__(1024) unsigned char smem_raw[];

// ------------------------------------------------------------------------------------------------
// mbar: init / arrive / arrive_expect_tx / try_wait / wait over two phases, fence_init.
// Thread 0 records try_wait answers in obs[] at fixed points (the host knows the expected sequence);
// phase 1 also needs 1024 transaction bytes from a 1-D bulk copy. Then thread 0 and warp 1 run two
// rounds of a handshake over barriers b (thread 0 -> warp 1) and c (warp 1 -> thread 0).
// Launch: 1 block x 64 threads.
struct MbarParams {
  const u32* src;   // kMbarWords words copied by the bulk load
  u32* copy;        // kMbarWords words: what landed in shared memory
  i32* obs;         // 8 try_wait answers (0/1) of thread 0
  i32* seen;        // [0,32): warp 1 round 0, [32,64): round 1, [64,96): thread 0's view of warp 1
};

#ifdef FA3LITE_BUILD_ptx_test_mbar
PTX_TEST_CHECK_PARAMS(MbarParams)

enum : int { kMbarWords = 256 };
enum : u32 { kMbarBytes = kMbarWords * 4 };

extern "C" __global__ void __launch_bounds__(64, 1) ptx_test_mbar(const __grid_constant__ MbarParams p) {
  __shared__ __align__(8) u64 bars[3];
  __shared__ __align__(128) u32 buf[kMbarWords];
  __shared__ i32 mailbox[33];
  const u32 a = smem_addr(&bars[0]), b = smem_addr(&bars[1]), c = smem_addr(&bars[2]);
  const int tid = threadIdx.x, lane = tid % 32;
  volatile i32* box = mailbox;

  for (int i = tid; i < 33; i += blockDim.x) box[i] = -1;
  if (tid == 0) {
    mbar::init(a, 2);
    mbar::init(b, 1);
    mbar::init(c, 32);
    mbar::fence_init();
  }
  __syncthreads();

  if (tid == 0) {
    int n = 0;
    p.obs[n++] = mbar::try_wait(a, 1);  // 1: the phase "before" the first counts as completed
    p.obs[n++] = mbar::try_wait(a, 0);  // 0: phase 0 waits for 2 arrivals
    mbar::arrive(a);
    p.obs[n++] = mbar::try_wait(a, 0);  // 0: one of two arrivals
    mbar::arrive(a);
    p.obs[n++] = mbar::try_wait(a, 0);  // 1: phase 0 completed
    p.obs[n++] = mbar::try_wait(a, 1);  // 0: phase 1 is now current
    mbar::arrive_expect_tx(a, kMbarBytes);
    mbar::arrive(a);
    p.obs[n++] = mbar::try_wait(a, 1);  // 0: both arrivals in, the announced bytes are not
    bulk::load(smem_addr(buf), p.src, kMbarBytes, a);
    mbar::wait(a, 1);
    p.obs[n++] = mbar::try_wait(a, 1);  // 1: phase 1 completed
    p.obs[n++] = mbar::try_wait(a, 0);  // 0: phase 2 (parity 0 again) is pending
  }
  __syncwarp();
  if (tid < 32) {
    mbar::wait(a, 1);  // a completed phase lets every later waiter through
    for (int i = lane; i < kMbarWords; i += 32) p.copy[i] = buf[i];
  }

  // Two handshake rounds: the waiters must see what the arriving side wrote before its arrive.
  if (tid == 0) {
    delay();
    box[0] = 1000;
    mbar::arrive(b);                       // completes b's phase 0
    mbar::wait(c, 0);                      // all 32 lanes of warp 1 arrived
    for (int i = 0; i < 32; ++i) p.seen[64 + i] = box[1 + i];
    delay();
    box[0] = 1001;
    mbar::arrive(b);                       // completes b's phase 1
  } else if (tid >= 32) {
    mbar::wait(b, 0);
    p.seen[lane] = box[0];
    box[1 + lane] = 2000 + lane;
    mbar::arrive(c);
    mbar::wait(b, 1);
    p.seen[32 + lane] = box[0];
  }
}
#endif

// ------------------------------------------------------------------------------------------------
// tma: prefetch_desc + load_2d/3d/4d/5d of boxes (possibly partly out of bounds or at negative
// coordinates) into 1024-aligned regions, all completing on one mbarrier armed with the full box
// bytes. The shared memory image (poisoned first) is copied out word by word.
// Launch: 1 block x 128 threads, dynamic smem = sum of the regions + 1024.
struct TmaLoadParams {
  TmaDesc m2, m3, m4, m5;
  const i32* cfg;   // coords: [0,2) 2d, [2,5) 3d, [5,9) 4d, [9,14) 5d; box bytes: [14,18)
  u32* out;         // total_words words of shared memory
  i32 total_words;  // sum of the box bytes, each rounded up to 1024, / 4
};

#ifdef FA3LITE_BUILD_ptx_test_tma_load
PTX_TEST_CHECK_PARAMS(TmaLoadParams)

extern "C" __global__ void __launch_bounds__(128, 1) ptx_test_tma_load(const __grid_constant__ TmaLoadParams p) {
  __shared__ __align__(8) u64 bar_storage;
  const u32 bar = smem_addr(&bar_storage);
  const u32 base = align_up(smem_addr(smem_raw), kSwizzleAlign);
  u32* img = reinterpret_cast<u32*>(generic(smem_raw, base));
  const i32* cfg = p.cfg;
  u32 off[4], total_bytes = 0;
  for (int i = 0, o = 0; i < 4; ++i) {
    off[i] = base + o;
    o += align_up(static_cast<u32>(cfg[14 + i]), kSwizzleAlign);
    total_bytes += static_cast<u32>(cfg[14 + i]);
  }

  for (int i = threadIdx.x; i < p.total_words; i += blockDim.x) img[i] = kPoison;
  fence::proxy_async_smem();  // the poison (generic writes) must not land after the TMA writes
  if (threadIdx.x == 0) {
    mbar::init(bar, 1);
    mbar::fence_init();
  }
  __syncthreads();

  if (threadIdx.x / 32 == 0 && warp::elect_one()) {
    tma::prefetch_desc(&p.m2);
    tma::prefetch_desc(&p.m3);
    tma::prefetch_desc(&p.m4);
    tma::prefetch_desc(&p.m5);
    mbar::arrive_expect_tx(bar, total_bytes);
    tma::load_2d(off[0], &p.m2, bar, cfg[0], cfg[1]);
    tma::load_3d(off[1], &p.m3, bar, cfg[2], cfg[3], cfg[4]);
    tma::load_4d(off[2], &p.m4, bar, cfg[5], cfg[6], cfg[7], cfg[8]);
    tma::load_5d(off[3], &p.m5, bar, cfg[9], cfg[10], cfg[11], cfg[12], cfg[13]);
  }
  mbar::wait(bar, 0);
  for (int i = threadIdx.x; i < p.total_words; i += blockDim.x) p.out[i] = img[i];
}
#endif

// ------------------------------------------------------------------------------------------------
// tma store + fence::proxy_async_smem: the threads write a [2][64][64] 16-bit tile in the swizzled
// layout with smem::st_u32 (generic proxy), fence, barrier; one thread stores the two 64-column
// blocks with store_5d (one bulk group each), waits with wait_group_read<0> and then overwrites the
// tile: the stored data must be the pattern (the engine had read it), rows past the tensor's end clipped.
// Element (r, col) of the tile holds the 16-bit pattern kStorePatternBase + 131 r + 3 col.
// Launch: 1 block x 128 threads, dynamic smem 16 KB + 1024.
struct TmaStoreParams {
  TmaDesc o;  // bshd_map(out, 64, box_col_blocks=1) of a (B, S, H, 128) 16-bit tensor
  i32 row0;
  i32 head;
  i32 batch;
};

#ifdef FA3LITE_BUILD_ptx_test_tma_store
PTX_TEST_CHECK_PARAMS(TmaStoreParams)

enum : int { kStoreRows = 64, kStoreCols = 128 };
enum : u32 { kStorePatternBase = 0x1000 };

extern "C" __global__ void __launch_bounds__(128, 1) ptx_test_tma_store(const __grid_constant__ TmaStoreParams p) {
  const u32 tile = align_up(smem_addr(smem_raw), kSwizzleAlign);
  constexpr int kPairs = kStoreRows * kStoreCols / 2;
  for (int i = threadIdx.x; i < kPairs; i += blockDim.x) {
    const int r = i / (kStoreCols / 2), col = 2 * (i % (kStoreCols / 2));
    const u32 lo = kStorePatternBase + 131 * r + 3 * col, hi = lo + 3;
    const u32 logical = (col / 64) * kStoreRows * kRowBytes + r * kRowBytes + (col % 64) * 2;
    smem::st_u32(tile + swizzle128(logical), lo | (hi << 16));
  }
  fence::proxy_async_smem();
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int blk = 0; blk < kStoreCols / 64; ++blk) {
      tma::store_5d(&p.o, tile + blk * kStoreRows * kRowBytes, 0, p.row0, blk, p.head, p.batch);
      tma::commit_group();
    }
    tma::wait_group_read<0>();
    // The engine has read the whole tile: overwriting it now must not change what arrives.
    for (int i = 0; i < kPairs; ++i) smem::st_u32(tile + 4 * i, 0u);
  }
}
#endif

// ------------------------------------------------------------------------------------------------
// tma reduce: reduce_add_4d of an f32 box (rows partly past the tensor's end) twice, as two bulk
// groups, then wait_group<0> + gmem::fence_proxy_async_global: the issuing thread reads the whole
// tensor back and must see both additions. Box element e (flat, innermost first) adds
// (e % 97) * 0.25 - 12 (exact in f32). Launch: 1 block x 128 threads, dynamic smem 4 KB + 1024.
struct TmaReduceParams {
  TmaDesc g;         // 4-D f32 map, box (32, 16, 2, 1), no swizzle
  float* tensor;     // the tensor g describes (contiguous), read back by thread 0
  float* readback;   // numel floats
  i32 numel;
  i32 c0, c1, c2, c3;
};

#ifdef FA3LITE_BUILD_ptx_test_tma_reduce
PTX_TEST_CHECK_PARAMS(TmaReduceParams)

enum : int { kReduceBoxElems = 32 * 16 * 2 };

extern "C" __global__ void __launch_bounds__(128, 1) ptx_test_tma_reduce(const __grid_constant__ TmaReduceParams p) {
  const u32 tile = align_up(smem_addr(smem_raw), kSwizzleAlign);
  float* vals = reinterpret_cast<float*>(generic(smem_raw, tile));
  for (int e = threadIdx.x; e < kReduceBoxElems; e += blockDim.x) vals[e] = (e % 97) * 0.25f - 12.0f;
  fence::proxy_async_smem();
  __syncthreads();
  if (threadIdx.x == 0) {
    tma::reduce_add_4d(&p.g, tile, p.c0, p.c1, p.c2, p.c3);
    tma::commit_group();
    tma::reduce_add_4d(&p.g, tile, p.c0, p.c1, p.c2, p.c3);
    tma::commit_group();
    tma::wait_group<0>();
    gmem::fence_proxy_async_global();
    const volatile float* t = p.tensor;
    for (int i = 0; i < p.numel; ++i) p.readback[i] = t[i];
  }
}
#endif

// ------------------------------------------------------------------------------------------------
// wgmma: D(64 x N) = A(64 x 64) * B(64 x N) in 4 k16 steps, f32 accumulate, for one (N, T).
// A is K-major in shared memory (SS) or in registers (RS, built with to_float + pack from global);
// B is K-major (stored [n][k], trans-b 0) or MN-major (stored [k][n], trans-b 1). Operands are written
// into the 128B-swizzled layout by ordinary stores + fence::proxy_async_smem (independent of TMA).
// accumulate = 0: the accumulator starts as NaN and the first step has scale_d = 0, so D = A*B only
// if the old value is ignored; accumulate = 1: D starts as C and every step has scale_d = 1.
// Steps 0-1 and 2-3 are two commit groups, drained with wait_group<1> then <0>.
// Launch: 1 block x 128 threads, dynamic smem 8 KB + 128 N + 1024.
struct WgmmaParams {
  const u16* a;      // (64, 64) [m][k]
  const u16* b;      // trans_b 0: (N, 64) [n][k]; trans_b 1: (64, N) [k][n]
  const float* c;    // (64, N)
  float* d;          // (64, N)
  i32 rs;            // 1: A from registers
  i32 trans_b;
  i32 accumulate;
};

namespace ptx_test {
enum : int { kWgK = 64, kWgSteps = kWgK / 16 };
enum : u32 {
  kSbo = 8 * kRowBytes,                  // 8 rows of 128 bytes: the next group of core-matrix rows
  kKMajorLbo = 16,                       // ignored by the hardware for swizzled K-major operands
  kKStepBytesKMajor = 32,                // 16 elements along the 128-byte row
  kKStepBytesMnMajor = 16 * kRowBytes,   // 16 rows
};

// The accumulator layout of m64nNk16 (thread t, value i): row 16 w + l/4 + 8 ((i>>1)&1),
// col 8 (i>>2) + 2 (l%4) + (i&1), with w = t/32, l = t%32.
__device__ __forceinline__ int acc_row(int t, int i) { return 16 * (t / 32) + (t % 32) / 4 + 8 * ((i >> 1) & 1); }
__device__ __forceinline__ int acc_col(int t, int i) { return 8 * (i >> 2) + 2 * (t % 4) + (i & 1); }

// 16-bit pair (m, k), (m, k+1) of global A, widened and re-packed: lower k in the low half.
template <typename T>
__device__ __forceinline__ u32 a_pair(const u16* a, int m, int k) {
  return math::pack(math::to_float(a[m * kWgK + k], T{}), math::to_float(a[m * kWgK + k + 1], T{}), T{});
}

template <int N, typename T, bool kRS, int kTB>
__device__ __forceinline__ void wgmma_steps(const WgmmaParams& p, u32 a_s, u32 b_s, float (&acc)[N / 2]) {
  const int t = threadIdx.x;
  u32 afrag[kWgSteps][4];
  if (kRS) {
    // A fragment of m64k16: a0 (r, c..c+1), a1 (r+8, c..c+1), a2 (r, c+8..c+9), a3 (r+8, c+8..c+9).
    const int r = 16 * (t / 32) + (t % 32) / 4, c = 2 * (t % 4);
#pragma unroll
    for (int kk = 0; kk < kWgSteps; ++kk) {
      afrag[kk][0] = a_pair<T>(p.a, r, 16 * kk + c);
      afrag[kk][1] = a_pair<T>(p.a, r + 8, 16 * kk + c);
      afrag[kk][2] = a_pair<T>(p.a, r, 16 * kk + c + 8);
      afrag[kk][3] = a_pair<T>(p.a, r + 8, 16 * kk + c + 8);
#pragma unroll
      for (int j = 0; j < 4; ++j) fence::reg(afrag[kk][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < N / 2; ++i) fence::reg(acc[i]);
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < kWgSteps; ++kk) {
    const int scale_d = (kk > 0 || p.accumulate) ? 1 : 0;
    const u64 db = kTB == 0 ? wgmma::desc_sw128(b_s + kk * kKStepBytesKMajor, kKMajorLbo, kSbo)
                            : wgmma::desc_sw128(b_s + kk * kKStepBytesMnMajor, kWgK * kRowBytes, kSbo);
    if (kRS) {
      wgmma::mma<N, T>::template rs<kTB>(acc, afrag[kk], db, scale_d);
    } else {
      const u64 da = wgmma::desc_sw128(a_s + kk * kKStepBytesKMajor, kKMajorLbo, kSbo);
      wgmma::mma<N, T>::template ss<0, kTB>(acc, da, db, scale_d);
    }
    if (kk % 2 == 1) wgmma::commit_group();
  }
  wgmma::wait_group<1>();
  wgmma::wait_group<0>();
#pragma unroll
  for (int i = 0; i < N / 2; ++i) fence::reg(acc[i]);
}

template <int N, typename T>
__device__ __forceinline__ void wgmma_test(const WgmmaParams& p) {
  const int t = threadIdx.x;
  const u32 a_s = align_up(smem_addr(smem_raw), kSwizzleAlign);
  const u32 b_s = a_s + 64 * kRowBytes;
  // A and K-major B: row-major [row][64] tiles; MN-major B: [N/64 blocks][64 k rows][64 n].
  for (int i = t; i < 64 * kWgK / 2; i += blockDim.x) {
    const int m = i / (kWgK / 2), k = 2 * (i % (kWgK / 2));
    smem::st_u32(a_s + swizzle128(m * kRowBytes + k * 2), p.a[m * kWgK + k] | (u32(p.a[m * kWgK + k + 1]) << 16));
  }
  for (int i = t; i < N * kWgK / 2; i += blockDim.x) {
    if (p.trans_b == 0) {
      const int n = i / (kWgK / 2), k = 2 * (i % (kWgK / 2));
      smem::st_u32(b_s + swizzle128(n * kRowBytes + k * 2), p.b[n * kWgK + k] | (u32(p.b[n * kWgK + k + 1]) << 16));
    } else {
      const int k = i / (N / 2), n = 2 * (i % (N / 2));
      const u32 logical = (n / 64) * kWgK * kRowBytes + k * kRowBytes + (n % 64) * 2;
      smem::st_u32(b_s + swizzle128(logical), p.b[k * N + n] | (u32(p.b[k * N + n + 1]) << 16));
    }
  }
  fence::proxy_async_smem();  // wgmma reads shared memory through the async proxy
  __syncthreads();

  float acc[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    acc[i] = p.accumulate ? p.c[acc_row(t, i) * N + acc_col(t, i)] : __int_as_float(kQuietNan);
  }
  if (p.rs) {
    if (p.trans_b) wgmma_steps<N, T, true, 1>(p, a_s, b_s, acc);
    else wgmma_steps<N, T, true, 0>(p, a_s, b_s, acc);
  } else {
    if (p.trans_b) wgmma_steps<N, T, false, 1>(p, a_s, b_s, acc);
    else wgmma_steps<N, T, false, 0>(p, a_s, b_s, acc);
  }
#pragma unroll
  for (int i = 0; i < N / 2; ++i) p.d[acc_row(t, i) * N + acc_col(t, i)] = acc[i];
}

}  // namespace ptx_test

#define PTX_TEST_WGMMA_KERNEL(NAME, N, T)                                                      \
  PTX_TEST_CHECK_PARAMS(WgmmaParams)                                                          \
  extern "C" __global__ void __launch_bounds__(128, 1) NAME(const __grid_constant__ WgmmaParams p) { \
    wgmma_test<N, T>(p);                                                                       \
  }

#ifdef FA3LITE_BUILD_ptx_test_wgmma_bf16_n64
PTX_TEST_WGMMA_KERNEL(ptx_test_wgmma_bf16_n64, 64, bf16_t)
#endif
#ifdef FA3LITE_BUILD_ptx_test_wgmma_bf16_n128
PTX_TEST_WGMMA_KERNEL(ptx_test_wgmma_bf16_n128, 128, bf16_t)
#endif
#ifdef FA3LITE_BUILD_ptx_test_wgmma_bf16_n256
PTX_TEST_WGMMA_KERNEL(ptx_test_wgmma_bf16_n256, 256, bf16_t)
#endif
#ifdef FA3LITE_BUILD_ptx_test_wgmma_f16_n64
PTX_TEST_WGMMA_KERNEL(ptx_test_wgmma_f16_n64, 64, f16_t)
#endif
#ifdef FA3LITE_BUILD_ptx_test_wgmma_f16_n128
PTX_TEST_WGMMA_KERNEL(ptx_test_wgmma_f16_n128, 128, f16_t)
#endif

// ------------------------------------------------------------------------------------------------
// math: ex2, lg2, rcp, neg_inf, pack (bf16/f16, lo/hi order), to_float, shfl_xor. Element i per thread.
// Launch: 1 block x 256 threads (every input array has 256 elements).
struct MathParams {
  const float* x;         // ex2 input
  const float* y;         // lg2 / rcp input
  const float* lo;        // pack inputs
  const float* hi;
  const u16* bits_bf16;   // to_float inputs
  const u16* bits_f16;
  float* ex2;
  float* lg2;
  float* rcp;
  float* ninf;
  u32* pack_bf16;
  u32* pack_f16;
  float* tof_bf16;
  float* tof_f16;
  float* shfl;            // [5][256]: shfl_xor(x, 1 << m)
};

#ifdef FA3LITE_BUILD_ptx_test_math
PTX_TEST_CHECK_PARAMS(MathParams)

extern "C" __global__ void __launch_bounds__(256, 1) ptx_test_math(const __grid_constant__ MathParams p) {
  const int i = threadIdx.x;
  p.ex2[i] = math::ex2(p.x[i]);
  p.lg2[i] = math::lg2(p.y[i]);
  p.rcp[i] = math::rcp(p.y[i]);
  p.ninf[i] = math::neg_inf();
  p.pack_bf16[i] = math::pack(p.lo[i], p.hi[i], bf16_t{});
  p.pack_f16[i] = math::pack(p.lo[i], p.hi[i], f16_t{});
  p.tof_bf16[i] = math::to_float(p.bits_bf16[i], bf16_t{});
  p.tof_f16[i] = math::to_float(p.bits_f16[i], f16_t{});
  const float v = p.x[i];
#pragma unroll
  for (int m = 0; m < 5; ++m) p.shfl[m * blockDim.x + i] = math::shfl_xor(v, 1 << m);
}
#endif

// ------------------------------------------------------------------------------------------------
// smem: st_u32 / ld_u32 / stmatrix_x4, plus smem_vec::st_v4_f32 / ld_v2_f32.
// Each warp owns a 1024-byte region of 32 slots of 32 bytes, first filled with st_u32 (word w of warp
// g holds kSmemFill | g << 8 | w). Row k of matrix q goes to slot (13 (8q + k)) % 32 (lane 8q + k gives
// that address); register r_q of lane l carries matrix q's row l/4, cols 2 (l%4), +1, with the 16-bit
// code 0x8000 | g << 9 | q << 6 | row << 3 | col. The region is read back with ld_u32.
// The vector part: thread t stores (t, t + 0.25, t + 0.5, t + 0.75) and reads the last two of t ^ 1.
// Launch: 1 block x 128 threads, dynamic smem 4 KB + 2 KB + 1024.
struct SmemParams {
  u32* words;       // [4 warps][256]
  float* vec;       // [128][2]
};

#ifdef FA3LITE_BUILD_ptx_test_smem
PTX_TEST_CHECK_PARAMS(SmemParams)

enum : u32 { kSmemFill = 0x5A000000u };
enum : int { kSlots = 32, kSlotBytes = 32, kSlotStride = 13, kRegionWords = kSlots * kSlotBytes / 4 };

extern "C" __global__ void __launch_bounds__(128, 1) ptx_test_smem(const __grid_constant__ SmemParams p) {
  const int t = threadIdx.x, g = t / 32, l = t % 32;
  const u32 base = align_up(smem_addr(smem_raw), kSwizzleAlign);
  const u32 region = base + g * kRegionWords * 4;
  for (int w = l; w < kRegionWords; w += 32) smem::st_u32(region + 4 * w, kSmemFill | (g << 8) | w);
  __syncwarp();

  u32 r[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const u32 row = l / 4, col = 2 * (l % 4);
    const u32 code = 0x8000u | (g << 9) | (q << 6) | (row << 3) | col;
    r[q] = code | ((code + 1) << 16);
  }
  const int q = l / 8, k = l % 8;
  smem::stmatrix_x4(region + ((kSlotStride * (8 * q + k)) % kSlots) * kSlotBytes, r[0], r[1], r[2], r[3]);
  __syncwarp();
  for (int w = l; w < kRegionWords; w += 32) p.words[g * kRegionWords + w] = smem::ld_u32(region + 4 * w);

  const u32 vbase = base + 4 * kRegionWords * 4;
  smem_vec::st_v4_f32(vbase + 16 * t, t, t + 0.25f, t + 0.5f, t + 0.75f);
  __syncthreads();
  float c, d;
  smem_vec::ld_v2_f32(vbase + 16 * (t ^ 1) + 8, c, d);
  p.vec[2 * t] = c;
  p.vec[2 * t + 1] = d;
}
#endif

// ------------------------------------------------------------------------------------------------
// warp::elect_one: out[it * blockDim + t] = 1 in exactly the elected lanes; three elections per warp.
// Launch: 1 block x 256 threads.
struct ElectParams {
  i32* out;   // [3][256]
};

#ifdef FA3LITE_BUILD_ptx_test_elect
PTX_TEST_CHECK_PARAMS(ElectParams)

extern "C" __global__ void __launch_bounds__(256, 1) ptx_test_elect(const __grid_constant__ ElectParams p) {
#pragma unroll 1
  for (int it = 0; it < 3; ++it) p.out[it * blockDim.x + threadIdx.x] = warp::elect_one() ? 1 : 0;
}
#endif

// ------------------------------------------------------------------------------------------------
// mbar::wait giving up (debug builds only; the host runs it in a child process, since the trap ends
// the CUDA context): in block `stuck_block`, thread `stuck_thread` waits for a phase of a barrier
// that nobody arrives at; every other thread exits. The debug build's bounded wait must report that
// thread and barrier (cuda_src/ptx/debug.cuh) and trap instead of hanging.
// Launch: any grid x 64 threads.
struct MbarStuckParams {
  i32 stuck_block;
  i32 stuck_thread;
};

#ifdef FA3LITE_BUILD_ptx_test_mbar_stuck
PTX_TEST_CHECK_PARAMS(MbarStuckParams)

extern "C" __global__ void __launch_bounds__(64, 1) ptx_test_mbar_stuck(const __grid_constant__ MbarStuckParams p) {
  __shared__ __align__(8) u64 bar;
  const u32 a = smem_addr(&bar);
  if (threadIdx.x == 0) {
    mbar::init(a, 1);
    mbar::fence_init();
  }
  __syncthreads();
  if (static_cast<i32>(blockIdx.x) == p.stuck_block && static_cast<i32>(threadIdx.x) == p.stuck_thread) {
    mbar::wait(a, 0);   // phase 0 needs one arrival that never comes
  }
}
#endif

// ------------------------------------------------------------------------------------------------
// warpgroup::setmaxnreg_dec/inc in the FA3 shape: 3 warpgroups, one role branch each, entry register
// count fixed by __launch_bounds__(384, 1) (ptxas would otherwise ignore setmaxnreg: C7508, which
// the runtime's compile turns into an error). Producer threads write 3 t + 1; consumer threads write
// the sum of in[t % 64 + j] * in[j] over j < 64 (a dot product kept in registers).
// Launch: 1 block x 384 threads.
struct SetmaxnregParams {
  const float* in;   // 128 floats
  float* out;        // 384 floats
};

#ifdef FA3LITE_BUILD_ptx_test_setmaxnreg
PTX_TEST_CHECK_PARAMS(SetmaxnregParams)

enum : int { kProducerRegs = 24, kConsumerRegs = 240 };

// The negative control: without the minimum-blocks bound ptxas cannot fix the entry register count.
#ifdef FA3LITE_PTX_TEST_NO_MIN_BLOCKS
#define PTX_TEST_SETMAXNREG_BOUNDS __launch_bounds__(384)
#else
#define PTX_TEST_SETMAXNREG_BOUNDS __launch_bounds__(384, 1)
#endif

extern "C" __global__ void PTX_TEST_SETMAXNREG_BOUNDS ptx_test_setmaxnreg(const __grid_constant__ SetmaxnregParams p) {
  const int t = threadIdx.x;
  if (t / 128 == 0) {
    warpgroup::setmaxnreg_dec<kProducerRegs>();
    p.out[t] = 3.0f * t + 1.0f;
  } else {
    warpgroup::setmaxnreg_inc<kConsumerRegs>();
    float v[64];
#pragma unroll
    for (int j = 0; j < 64; ++j) v[j] = p.in[t % 64 + j];
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 64; ++j) s += v[j] * p.in[j];
    p.out[t] = s;
  }
}
#endif

// ------------------------------------------------------------------------------------------------
// named_barrier: warp 0 (producer) waits a while, writes 128 values to shared memory and arrives on
// kFull; warps 1-4 sync on kFull and read them. Round 2 reuses kFull after the consumers arrived on
// kFree, which the producer syncs on before overwriting. out[round * 128 + c] = what consumer thread
// c read; the producer writes 1000 round + i into buf[i]. Launch: 1 block x 160 threads.
struct NamedBarrierParams {
  i32* out;   // [2][128]
};

#ifdef FA3LITE_BUILD_ptx_test_named_barrier
PTX_TEST_CHECK_PARAMS(NamedBarrierParams)

enum : u32 { kFull = 1, kFree = 2, kNbThreads = 160, kNbValues = 128 };

extern "C" __global__ void __launch_bounds__(160, 1)
ptx_test_named_barrier(const __grid_constant__ NamedBarrierParams p) {
  __shared__ i32 buf[kNbValues];
  volatile i32* vbuf = buf;
  const int t = threadIdx.x;
  for (int i = t; i < kNbValues; i += blockDim.x) vbuf[i] = -1;
  __syncthreads();
#pragma unroll 1
  for (int round = 0; round < 2; ++round) {
    if (t < 32) {
      if (round > 0) named_barrier::sync(kFree, kNbThreads);
      delay();
      for (int i = t; i < kNbValues; i += 32) vbuf[i] = 1000 * round + i;
      named_barrier::arrive(kFull, kNbThreads);
    } else {
      named_barrier::sync(kFull, kNbThreads);
      p.out[round * kNbValues + (t - 32)] = vbuf[t - 32];
      if (round == 0) named_barrier::arrive(kFree, kNbThreads);
    }
  }
}
#endif

// ------------------------------------------------------------------------------------------------
// bulk::reduce_add_f32 + gmem::ld_acquire / red_release_add / fence_proxy_async_global: the
// deterministic-accumulation semaphore. Block b waits until *flag == b, records acc[0] and acc[63],
// adds its row (b + 1) (j + 1) / 2 (j < 64) into acc with a bulk reduction, drains it, fences and
// releases flag + 1. Unordered, all blocks at once: thread t adds (b + 1) (4 t + i + 1) / 4 to
// acc4[4 t + i] with gmem::red_add_v4_f32. Launch: 8 blocks x 32 threads (all resident at once).
struct BulkGmemParams {
  float* acc;    // 64 floats, zero
  i32* flag;     // 1 int, zero
  float* seen;   // [blocks][2]
  float* acc4;   // 128 floats, zero
};

#ifdef FA3LITE_BUILD_ptx_test_bulk_gmem
PTX_TEST_CHECK_PARAMS(BulkGmemParams)

enum : int { kBulkFloats = 64 };

extern "C" __global__ void __launch_bounds__(32, 1) ptx_test_bulk_gmem(const __grid_constant__ BulkGmemParams p) {
  __shared__ __align__(16) float row[kBulkFloats];
  const int b = blockIdx.x, t = threadIdx.x;
  const float w = 0.25f * (b + 1);
  gmem::red_add_v4_f32(p.acc4 + 4 * t, w * (4 * t + 1), w * (4 * t + 2), w * (4 * t + 3), w * (4 * t + 4));
  for (int j = t; j < kBulkFloats; j += 32) row[j] = 0.5f * (b + 1) * (j + 1);
  fence::proxy_async_smem();  // the bulk reduction reads row through the async proxy
  __syncwarp();
  if (t == 0) {
    for (u32 spins = 0; gmem::ld_acquire(p.flag) != b; ++spins) {
      if (spins == kSpinLimit) asm volatile("trap;");  // never got its turn: fail, do not hang
    }
    const volatile float* acc = p.acc;
    p.seen[2 * b] = acc[0];
    p.seen[2 * b + 1] = acc[kBulkFloats - 1];
    bulk::reduce_add_f32(p.acc, smem_addr(row), kBulkFloats * 4);
    tma::commit_group();
    tma::wait_group<0>();
    gmem::fence_proxy_async_global();
    gmem::red_release_add(p.flag, 1);
  }
}
#endif

// ------------------------------------------------------------------------------------------------
// bulk::store + gmem::atom_acquire_add: the backward's dQ claims (attention/bwd_dq.cuh) on an
// accumulator that nobody zeroed. Block b takes a ticket; ticket 0 stores its row (b + 1) (j + 1) / 2
// (j < 64) with a bulk copy, drains it, fences and releases kClaimFlag into the word; every other
// ticket waits until the word (first as its ticket read it) holds the flag, fences and adds its row
// with a bulk reduction. tickets[b] records each block's ticket. Launch: 8 blocks x 32 threads.
struct BulkClaimParams {
  float* acc;      // 64 floats, NaN: must be stored before anything adds
  i32* word;       // 1 int, zero
  i32* tickets;    // [blocks]
};

#ifdef FA3LITE_BUILD_ptx_test_bulk_claim
PTX_TEST_CHECK_PARAMS(BulkClaimParams)

enum : int { kClaimFloats = 64, kClaimFlag = 1 << 30 };

extern "C" __global__ void __launch_bounds__(32, 1) ptx_test_bulk_claim(const __grid_constant__ BulkClaimParams p) {
  __shared__ __align__(16) float row[kClaimFloats];
  const int b = blockIdx.x, t = threadIdx.x;
  for (int j = t; j < kClaimFloats; j += 32) row[j] = 0.5f * (b + 1) * (j + 1);
  fence::proxy_async_smem();  // the bulk copy or reduction reads row through the async proxy
  __syncwarp();
  if (t == 0) {
    const i32 ticket = gmem::atom_acquire_add(p.word, 1);
    p.tickets[b] = ticket;
    if (ticket == 0) {
      bulk::store(p.acc, smem_addr(row), kClaimFloats * 4);
      tma::commit_group();
      tma::wait_group<0>();
      gmem::fence_proxy_async_global();
      gmem::red_release_add(p.word, kClaimFlag);
    } else {
      i32 seen = ticket;
      for (u32 spins = 0; !(seen & kClaimFlag); ++spins) {
        if (spins == kSpinLimit) asm volatile("trap;");  // the first row never landed: fail, do not hang
        seen = gmem::ld_acquire(p.word);
      }
      gmem::fence_proxy_async_global();
      bulk::reduce_add_f32(p.acc, smem_addr(row), kClaimFloats * 4);
      tma::commit_group();
      tma::wait_group<0>();
    }
  }
}
#endif
