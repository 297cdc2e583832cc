// TMA (cp.async.bulk.tensor): tile copies between global and shared memory driven by a tensor map.
// Coordinates are element indices, innermost (contiguous) dimension first. One instruction per function;
// each is executed by one elected thread.
#pragma once
#include "types.cuh"

namespace fa3lite { namespace tma {

// Pull the 128-byte descriptor into the TMA unit's cache ahead of the first copy.
__device__ __forceinline__ void prefetch_desc(const TmaDesc* desc) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(desc) : "memory");
}

// Per-sequence tensor maps (varlen): a 128-byte copy of a map in global memory gets a new base
// address and a new size of dimension Dim (tensormap.replace, generic proxy). The release fence then
// orders those writes before the tensormap proxy's reads, and the acquire fence (by the thread that
// issues the copies) drops any stale cached copy of the map.
__device__ __forceinline__ void replace_address(TmaDesc* desc, const void* addr) {
  asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" :: "l"(desc), "l"(addr) : "memory");
}

template <int Dim>
__device__ __forceinline__ void replace_dim(TmaDesc* desc, u32 size) {
  asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], %1, %2;"
               :: "l"(desc), "n"(Dim), "r"(size) : "memory");
}

__device__ __forceinline__ void fence_map_release() {
  asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
}

__device__ __forceinline__ void fence_map_acquire(const TmaDesc* desc) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(desc) : "memory");
}

// Load a box into shared memory; completion adds the box's bytes to `bar`'s transaction count.
// Out-of-bounds elements arrive as zeros and still count towards the bytes.
__device__ __forceinline__ void load_2d(u32 dst, const TmaDesc* desc, u32 bar, i32 c0, i32 c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4}], [%2];"
               :: "r"(dst), "l"(desc), "r"(bar), "r"(c0), "r"(c1) : "memory");
}

__device__ __forceinline__ void load_3d(u32 dst, const TmaDesc* desc, u32 bar, i32 c0, i32 c1, i32 c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];"
               :: "r"(dst), "l"(desc), "r"(bar), "r"(c0), "r"(c1), "r"(c2) : "memory");
}

__device__ __forceinline__ void load_4d(u32 dst, const TmaDesc* desc, u32 bar, i32 c0, i32 c1, i32 c2, i32 c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5, %6}], [%2];"
               :: "r"(dst), "l"(desc), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}

__device__ __forceinline__ void load_5d(u32 dst, const TmaDesc* desc, u32 bar,
                                        i32 c0, i32 c1, i32 c2, i32 c3, i32 c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
               :: "r"(dst), "l"(desc), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4) : "memory");
}

// Store a box from shared memory; elements outside the tensor are clipped (never written).
__device__ __forceinline__ void store_4d(const TmaDesc* desc, u32 src, i32 c0, i32 c1, i32 c2, i32 c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
               :: "l"(desc), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}

__device__ __forceinline__ void store_5d(const TmaDesc* desc, u32 src, i32 c0, i32 c1, i32 c2, i32 c3, i32 c4) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
               :: "l"(desc), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4) : "memory");
}

// Add a box from shared memory into global memory (f32 += element-wise), clipped like store.
__device__ __forceinline__ void reduce_add_4d(const TmaDesc* desc, u32 src, i32 c0, i32 c1, i32 c2, i32 c3) {
  asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group"
               " [%0, {%2, %3, %4, %5}], [%1];"
               :: "l"(desc), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}

// Close the bulk stores issued so far into one group.
__device__ __forceinline__ void commit_group() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Wait until at most N committed store groups still read their shared-memory source.
template <int N>
__device__ __forceinline__ void wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}

// Wait until at most N committed store groups are still writing global memory.
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}

}}  // namespace fa3lite::tma
