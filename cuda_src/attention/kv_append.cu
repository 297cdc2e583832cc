// KV-cache append (flash_attn_with_kvcache's first step, fa3lite/kvcache.py): row i of batch row b of
// the new K and V goes to position p = clamp(seqlen[b] + i, 0, capacity - 1) of that batch row's
// cache -- cache row batch_idx[b] (b without it), or with a page table row p % page_size of page
// page_table[b, p / page_size]. One launch for both tensors, where the torch ops it replaces took a
// dozen small kernels. The copy is bits (any 16-bit dtype), in 16-byte chunks: the host sends only
// rows whose last dim is contiguous and whose addresses and strides are multiples of 16 bytes.
// Device values (seqlens, batch_idx, page ids) are never read on the host: they are clamped here to
// the cache's positions, rows and pages, so nothing is written out of bounds whatever they hold.
// Several i clamped onto one position write it in no fixed order, as index_copy_ would.
#include "../ptx/types.cuh"

using namespace fa3lite;

namespace fa3lite { namespace attn { namespace append {

struct AppendParams {
  const u16* k_new;          // (B, S_new, Hk, D) with the strides below (elements)
  const u16* v_new;          // (B, S_new, Hk, Dv)
  u16* k_cache;              // units x rows_per_unit rows of (Hk, D): B_cache x S_cache, or pages x page_size
  u16* v_cache;
  const i32* seqlens;        // (B,) append positions, or null: every batch row appends at `seqlen`
  const void* batch_idx;     // (B,) int32 or int64 cache row of each batch row, or null (row b); no page table
  const i32* page_table;     // (B, pages_per_seq) or null
  i32* seqused;              // (B,) or null: the append positions + s_new, the attention's seqused_k
  i64 k_new_b, k_new_s, k_new_h;
  i64 v_new_b, v_new_s, v_new_h;
  i64 k_cache_row, k_cache_h;
  i64 v_cache_row, v_cache_h;
  i32 seqlen;
  i32 s_new;
  i32 heads;
  i32 k_chunks;              // D / 8: 16-byte chunks of one head's row
  i32 v_chunks;
  i32 capacity;              // positions of one batch row: S_cache, or pages_per_seq * page_size
  i32 rows_per_unit;         // S_cache, or page_size
  i32 units;                 // B_cache, or the pool's pages
  i32 pages_per_seq;
  i32 batch_idx_64;          // batch_idx holds int64 values
};

static_assert(sizeof(AppendParams) == FA3LITE_PARAMS_SIZE, "host and device disagree on the AppendParams size");
#ifdef FA3LITE_PARAMS_OK
static_assert(FA3LITE_PARAMS_OK, "host and device disagree on the AppendParams layout");
#endif

constexpr int kThreads = 128;

__device__ __forceinline__ i64 clamp(i64 x, i64 hi) { return x < 0 ? 0 : (x > hi ? hi : x); }

// One tensor's row: `chunks` 16-byte chunks per head, heads x chunks in all, strided by the block.
__device__ __forceinline__ void copy_row(const u16* src, i64 src_h, u16* dst, i64 dst_h, int heads, int chunks) {
  for (int c = threadIdx.x; c < heads * chunks; c += kThreads) {
    const int h = c / chunks;
    const int j = c % chunks;
    const uint4 v = *reinterpret_cast<const uint4*>(src + h * src_h + 8 * j);
    *reinterpret_cast<uint4*>(dst + h * dst_h + 8 * j) = v;
  }
}

}}}  // namespace fa3lite::attn::append

using namespace fa3lite::attn::append;

// grid.x: one CTA per (batch row b, new row i), b * S_new + i.
extern "C" __global__ void __launch_bounds__(kThreads) fa3lite_kv_append(const __grid_constant__ AppendParams p) {
  const int b = blockIdx.x / p.s_new;
  const int i = blockIdx.x % p.s_new;
  const i64 start = p.seqlens != nullptr ? p.seqlens[b] : p.seqlen;
  const int pos = static_cast<int>(clamp(start + i, p.capacity - 1));   // the capacity is an i32
  i64 unit = b;
  int row = pos;
  if (p.page_table != nullptr) {
    unit = p.page_table[static_cast<i64>(b) * p.pages_per_seq + pos / p.rows_per_unit];
    row = pos % p.rows_per_unit;
  } else if (p.batch_idx != nullptr) {
    unit = p.batch_idx_64 ? static_cast<const i64*>(p.batch_idx)[b] : static_cast<const i32*>(p.batch_idx)[b];
  }
  if (p.seqused != nullptr && i == 0 && threadIdx.x == 0) {
    // The key lengths of the attention launched next on the stream (which orders it after this
    // kernel): start + s_new as torch's int32 add computes it (wrapping; the attention kernels
    // clamp it to the cache), so a decode step needs no torch kernel launch for it.
    p.seqused[b] = static_cast<i32>(static_cast<u32>(start) + static_cast<u32>(p.s_new));
  }
  const i64 flat = clamp(unit, p.units - 1) * p.rows_per_unit + row;
  copy_row(p.k_new + b * p.k_new_b + i * p.k_new_s, p.k_new_h, p.k_cache + flat * p.k_cache_row, p.k_cache_h,
           p.heads, p.k_chunks);
  copy_row(p.v_new + b * p.v_new_b + i * p.v_new_s, p.v_new_h, p.v_cache + flat * p.v_cache_row, p.v_cache_h,
           p.heads, p.v_chunks);
}
