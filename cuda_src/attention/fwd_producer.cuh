// Producer warpgroup: warp 0 walks the tiles (all its lanes take part in the tile hand-off, see
// scheduler.cuh); its lane 0 issues every TMA load. The other three warps idle.
// Contract with the consumers (per K/V stage s, round r = phase), continued across the CTA's tiles:
//   producer waits k_empty[s] (phase ^ 1), arms k_full[s] with the full box bytes, loads K  -> k_full[s]
//   producer waits v_empty[s] (phase ^ 1), arms v_full[s], loads V                          -> v_full[s]
// Round 0's empty waits pass at once: the buffers start free. K and V have separate barriers so
// S = Q K^T can start while V is still in flight. Key blocks go from the last to the first, so the
// masked blocks of the band's upper edge come first (those of a window's lower edge come last).
// Q, once per tile with visible keys (the j-th such tile of the CTA), into buffer j % kQStages: wait
// q_empty for the phase of the tile that used the buffer before (j >= kQStages), arm q_full, load Q.
// With two buffers before the tile's K/V (the buffer was freed a tile ago, so Q lands while the
// consumers finish the previous tile), with one after the tile's first K load (so K/V of the next
// tile already stream in while the consumers finish the current one).
#pragma once
#include "../ptx/mbarrier.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/tma.cuh"
#include "fwd_smem.cuh"
#include "params.cuh"
#include "pipeline.cuh"
#include "scheduler.cuh"
#include "tile_io.cuh"
#include "trace.cuh"

namespace fa3lite { namespace attn {

// Q tiles (kBlockM rows), K and V tiles (kBlockN rows), each with its own padding: tile_io.cuh.
__device__ __forceinline__ void load_q(u32 dst, const TmaDesc* map, u32 bar, int row, int head, int batch) {
  tile_io::load<kBlockM, kColBlocks, kPaddedQK>(dst, map, bar, row, head, batch);
}
// kSplit: Q's rows in groups of p.row_group (params.cuh); a tile starts at a group's first row (the
// host keeps sequences and tiles group-aligned), and its box may hold fewer rows than kBlockM
// (p.q_tile_bytes): the rows past it are past the sequence's end, computed on and never written.
__device__ __forceinline__ void load_q_groups(const FwdParams& p, u32 dst, u32 bar, int row, int head) {
  mbar::arrive_expect_tx(bar, static_cast<u32>(p.q_tile_bytes));
  tile_io::load_groups<kBlockM, kColBlocks, kPaddedQK>(dst, &p.q, bar, row / p.row_group, head);
}
__device__ __forceinline__ void load_k(u32 dst, const TmaDesc* map, u32 bar, int row, int head, int batch) {
  tile_io::load<kBlockN, kColBlocks, kPaddedQK>(dst, map, bar, row, head, batch);
}
__device__ __forceinline__ void load_v(u32 dst, const TmaDesc* map, u32 bar, int row, int head, int batch) {
  tile_io::load<kBlockN, kColBlocks, kPaddedV>(dst, map, bar, row, head, batch);
}

// kPaged: key block n of sequence `batch` arrives in chunks of p.page_rows rows, each from its page
// (a chunk never straddles pages: page_rows divides page_size). Chunks wholly past the sequence's end
// are not loaded (the barrier expects only the loaded bytes); their rows, and the rows past the end
// inside the last chunk, are masked in S and cleared in V by the consumer (fwd_consumer.cuh
// clear_v_tail). A page id out of the pool reads zeros (TMA clips at the map), never another buffer.
struct PagedChunks {
  int count;   // chunks of the block to load (at most 32: page_rows >= 8, kBlockN <= 256)
  int row;     // lane c < count: chunk c's first row in the pool
};

// Every lane of the producer warp: lane c looks up chunk c's page, so a block's page-table reads are
// one round trip (not one per chunk), shared by its K and V loads.
__device__ __forceinline__ PagedChunks paged_chunks(const FwdParams& p, int seqlen_k, int batch, int n) {
  const int first = n * kBlockN;
  const int count = min(kBlockN, seqlen_k - first + p.page_rows - 1) / p.page_rows;
  const int c = static_cast<int>(threadIdx.x % 32);
  int row = 0;
  if (c < count) {
    const int logical = first + c * p.page_rows;
    row = p.page_table[static_cast<i64>(batch) * p.pages_per_seq + logical / p.page_size] * p.page_size +
          logical % p.page_size;
  }
  return {count, row};
}

// Every lane of the producer warp (the chunk rows go round by shuffles); the leader arms the barrier
// and issues one copy per 64-column block into the chunk's rows of the stage ([D/64][kBlockN][64],
// chunks at 1024-byte multiples, so the 128-byte swizzle lines up).
template <bool Padded>
__device__ __forceinline__ void load_paged(u32 dst, const TmaDesc* map, u32 bar, const FwdParams& p,
                                           const PagedChunks& chunks, int head_kv, bool leader) {
  if (leader) mbar::arrive_expect_tx(bar, static_cast<u32>(chunks.count * p.page_rows * kHeadDim * kElemBytes));
  for (int c = 0; c < chunks.count; ++c) {
    const int pool_row = __shfl_sync(0xffffffffu, chunks.row, c);
    if (leader) {
#pragma unroll
      for (int blk = 0; blk < kColBlocks; ++blk) {
        tile_io::load_block<Padded>(dst + (blk * kBlockN + c * p.page_rows) * tile_io::kRowBytes, map, bar, blk,
                                    pool_row, head_kv, 0);
      }
    }
  }
}

// Every lane of the producer warp (the leader issues): tile t's Q into its buffer; counts q_round.
__device__ __forceinline__ void produce_q(const FwdParams& p, const FwdSmem& sm, const TmaDesc* map_q, const Tile& t,
                                          int row0, int batch, u32& q_round, bool leader) {
  const int slot = static_cast<int>(q_round % kQStages);
  const u32 round = q_round / kQStages;
  if (round > 0) mbar::wait(sm.q_empty(slot), (round - 1) & 1u);
  if (leader && kSplit) {
    load_q_groups(p, sm.q(slot), sm.q_full(slot), row0 + t.m_block * kBlockM, t.head);
  } else if (leader) {
    mbar::arrive_expect_tx(sm.q_full(slot), kQTileBytes);
    load_q(sm.q(slot), map_q, sm.q_full(slot), row0 + t.m_block * kBlockM, t.head, batch);
  }
  ++q_round;
}

__device__ __forceinline__ void fwd_producer(const FwdParams& p, const FwdSmem& sm, bool leader) {
  if (leader) {
    tma::prefetch_desc(&p.q);
    tma::prefetch_desc(&p.k);
    tma::prefetch_desc(&p.v);
  }
  RingPos<kStages> pos;
  u32 q_round = 0;   // tiles with visible keys so far: Q loads and q_empty phases
  int handoffs = 0;
  SeqCursor cursor;
  SeqMapSets maps;
  for (int idx = producer_first_tile(p, cursor, handoffs, leader); idx < p.num_tiles;
       idx = producer_next_tile(p, idx, cursor, handoffs, leader)) {
    const Tile t = tile_of(p, idx);
    const Seq sq = seq_of(p, t.batch);
    if (kVarlen && t.m_block * kBlockM >= sq.seqlen_q) continue;   // past the sequence's end: no work
    const KeyBlocks kb = key_blocks(p, sq, t);
    // Maps and coordinates: the tensors' own (batch t.batch; kVarlen: batch 0 at the sequence's first
    // rows), or kSeqMaps the sequence's copies (rows from 0). kPaged: K and V rows are the pool's.
    const u32 set = kSeqMaps && kb.end > kb.begin ? maps.of(p, t.batch, sq, leader) : 0u;
    if (kSeqMaps && leader && kb.end > kb.begin) trace::mark(static_cast<unsigned>(idx), 6);   // made or reused
    const TmaDesc* map_q = kSeqMaps ? seq_map(p, set, 0) : &p.q;
    const TmaDesc* map_k = kSeqMaps ? seq_map(p, set, 1) : &p.k;
    const TmaDesc* map_v = kSeqMaps ? seq_map(p, set, 2) : &p.v;
    const int batch = kVarlen ? 0 : t.batch;
    const int q_row0 = kSeqMaps ? 0 : sq.q_start;
    const int k_row0 = kSeqMaps || kPaged ? 0 : sq.k_start;
    // kb.begin >= kb.end: nothing visible; the consumers write zeros and -inf without any load.
    if (kQStages == 2 && kb.end > kb.begin) produce_q(p, sm, map_q, t, q_row0, batch, q_round, leader);
    for (int n = kb.end - 1; n >= kb.begin; --n) {
      const PagedChunks chunks = kPaged ? paged_chunks(p, sq.seqlen_k, t.batch, n) : PagedChunks{};
      trace::wait(blockIdx.x, 2, sm.k_empty(pos.stage), pos.phase ^ 1u);
      if constexpr (kPaged) {
        load_paged<kPaddedQK>(sm.k(pos.stage), map_k, sm.k_full(pos.stage), p, chunks, t.head_kv, leader);
      } else if (leader) {
        mbar::arrive_expect_tx(sm.k_full(pos.stage), kKVTileBytes);
        load_k(sm.k(pos.stage), map_k, sm.k_full(pos.stage), k_row0 + n * kBlockN, t.head_kv, batch);
      }
      if (kQStages == 1 && n == kb.end - 1) produce_q(p, sm, map_q, t, q_row0, batch, q_round, leader);
      trace::wait(blockIdx.x, 2, sm.v_empty(pos.stage), pos.phase ^ 1u);
      if constexpr (kPaged) {
        load_paged<kPaddedV>(sm.v(pos.stage), map_v, sm.v_full(pos.stage), p, chunks, t.head_kv, leader);
      } else if (leader) {
        mbar::arrive_expect_tx(sm.v_full(pos.stage), kKVTileBytes);
        load_v(sm.v(pos.stage), map_v, sm.v_full(pos.stage), k_row0 + n * kBlockN, t.head_kv, batch);
      }
      pos.advance();
    }
  }
}

}}  // namespace fa3lite::attn
