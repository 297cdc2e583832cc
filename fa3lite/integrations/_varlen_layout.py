"""Where the tokens of a padded batch go in flash_attn_varlen_func's packed layout, found with one
host sync.

A description (``Tokens``) says, on the device, which query rows (B, Sq) and key columns (B, Sk) of a
padded batch take part and which packed sequence each belongs to. ``count`` adds each sequence's
size and each token's rank inside its sequence (still on the device: the mask checks in
_mask_pattern read them). ``fetch`` copies the handful of numbers the host needs (how many
sequences, the longest, the totals, and any flags the caller adds) in one .tolist(); ``layout`` then
builds cu_seqlens and the row indices without another sync (torch.nonzero_static, sized by the
fetched totals). ``gather`` / ``scatter`` move (B, S, H, D) tensors into and out of that layout.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

_INDEX = torch.int64
_CU_SEQLENS = torch.int32   # flash_attn_varlen_func's offsets


@dataclasses.dataclass(frozen=True)
class Tokens:
    """Which tokens of a padded batch take part, and in which sequence.

    keep_q (B, Sq), keep_k (B, Sk) bool: the query rows and key columns that take part.
    seq_q (B, Sq), seq_k (B, Sk) int64: each token's sequence, in 0 .. capacity - 1 where kept;
        non-decreasing in (batch, position) order, so a sequence's kept tokens are adjacent once the
        others are dropped. Query and key tokens of a sequence carry the same number.
    capacity: an upper bound on the number of sequences, known on the host.
    sequences: the number of sequences: an int, or a 0-d device tensor that fetch reads.
    rows_are_sequences: sequence b is batch row b (one sequence per row, none spanning rows).
    """

    keep_q: torch.Tensor
    keep_k: torch.Tensor
    seq_q: torch.Tensor
    seq_k: torch.Tensor
    capacity: int
    sequences: int | torch.Tensor
    rows_are_sequences: bool


def by_row(keep_q: torch.Tensor, keep_k: torch.Tensor) -> Tokens:
    """One sequence per batch row: the kept tokens of row b form sequence b (possibly empty)."""
    batch = keep_q.shape[0]
    rows = torch.arange(batch, device=keep_q.device, dtype=_INDEX)
    return Tokens(keep_q, keep_k, rows[:, None].expand(keep_q.shape), rows[:, None].expand(keep_k.shape), batch,
                  batch, True)


def by_position_ids(position_ids: torch.Tensor, keep_q: torch.Tensor, keep_k: torch.Tensor) -> Tokens:
    """Sequences packed into a batch of one row, self-attention (Sq == Sk): a sequence starts where
    position_ids (S values) takes its minimum -- as transformers finds packed sequences for
    FlashAttention (most start at 0; RoBERTa-like models at padding_idx + 1) -- and at the first token."""
    positions = position_ids.reshape(1, -1)
    starts = positions == positions.min()
    starts[:, 0] = True
    seq = starts.cumsum(-1) - 1
    return Tokens(keep_q, keep_k, seq, seq, positions.shape[1], seq[0, -1] + 1, False)


def by_cu_seqlens(cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor, batch: int, seqlen_q: int,
                  seqlen_k: int) -> Tokens:
    """The sequences that cu_seqlens_q / cu_seqlens_k ((N + 1,) offsets into the flattened B * S
    tokens) describe; tokens past the last offset take no part."""

    def side(cu, seqlen):
        flat = torch.arange(batch * seqlen, device=cu.device, dtype=_INDEX)
        seq = torch.searchsorted(cu[1:].to(_INDEX), flat, right=True)
        keep = (flat >= cu[0]) & (flat < cu[-1])
        return keep.view(batch, seqlen), seq.view(batch, seqlen)

    keep_q, seq_q = side(cu_seqlens_q, seqlen_q)
    keep_k, seq_k = side(cu_seqlens_k, seqlen_k)
    sequences = cu_seqlens_q.shape[0] - 1
    return Tokens(keep_q, keep_k, seq_q, seq_k, sequences, sequences, False)


@dataclasses.dataclass(frozen=True)
class Counted:
    """Tokens with per-sequence sizes and in-sequence ranks, all on the device.

    count_q, count_k (capacity,) int64: kept query / key tokens per sequence.
    rank_k (B, Sk) int64: a kept key's index inside its sequence.
    diagonal_q (B, Sq) int64: for a kept query, the in-sequence index of the key on its bottom-right
        diagonal (its own index + count_k - count_q of its sequence), the key that causal attention
        aligned bottom-right lets it see last.
    """

    tokens: Tokens
    count_q: torch.Tensor
    count_k: torch.Tensor
    rank_k: torch.Tensor
    diagonal_q: torch.Tensor


def count(tokens: Tokens) -> Counted:
    """Sizes and ranks of ``tokens``' sequences (no host sync)."""
    count_q, rank_q = _count_side(tokens.keep_q, tokens.seq_q, tokens.capacity)
    count_k, rank_k = _count_side(tokens.keep_k, tokens.seq_k, tokens.capacity)
    seq_q = tokens.seq_q.clamp(0, max(tokens.capacity - 1, 0))
    diagonal_q = rank_q + (count_k - count_q)[seq_q]
    return Counted(tokens, count_q, count_k, rank_k, diagonal_q)


def _count_side(keep: torch.Tensor, seq: torch.Tensor, capacity: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens per sequence (capacity,), each token's index inside its sequence (B, S))."""
    # Dropped tokens are counted in one extra bucket past the last sequence, then cut off.
    bucket = torch.where(keep, seq, capacity).flatten()
    counts = torch.zeros(capacity + 1, dtype=_INDEX, device=keep.device)
    counts = counts.scatter_add(0, bucket, torch.ones_like(bucket))[:capacity]
    starts = counts.cumsum(0) - counts
    kept_before = keep.flatten().to(_INDEX).cumsum(0) - 1
    rank = kept_before.view(keep.shape) - starts[seq.clamp(0, max(capacity - 1, 0))]
    return counts, rank


@dataclasses.dataclass(frozen=True)
class HostCounts:
    """The numbers of a Counted that the host needs, and the caller's flags, read in one sync."""

    sequences: int
    max_seqlen_q: int
    max_seqlen_k: int
    total_q: int
    total_k: int
    flags: tuple[int, ...]


def fetch(counted: Counted, flags: tuple[torch.Tensor, ...] = ()) -> HostCounts:
    """One .tolist() of the sequence count, the longest sequences, the totals and ``flags`` (0-d
    tensors, e.g. a mask check's verdict): the call's only host sync."""
    sequences = counted.tokens.sequences
    # A host int stays on the host: copying it to the GPU would wait for the stream, a second sync.
    on_device = isinstance(sequences, torch.Tensor)
    numbers = [sequences] if on_device else []
    numbers += [_max(counted.count_q), _max(counted.count_k), counted.count_q.sum(), counted.count_k.sum(), *flags]
    values = torch.stack([n.to(_INDEX) for n in numbers]).tolist()
    if not on_device:
        values.insert(0, sequences)
    return HostCounts(*values[:5], tuple(values[5:]))


def _max(counts: torch.Tensor) -> torch.Tensor:
    return counts.max() if counts.numel() else counts.new_zeros(())


@dataclasses.dataclass(frozen=True)
class VarlenLayout:
    """flash_attn_varlen_func's arguments for a padded batch.

    cu_seqlens_q, cu_seqlens_k: int32 (N + 1,) offsets; max_seqlen_q, max_seqlen_k: ints.
    rows_q (total_q,), rows_k (total_k,) int64: each packed row's index in the flattened (B * S) batch.
    dense: every token takes part and each batch row is one sequence: flash_attn_func on the padded
        tensors computes the same, without packing.
    """

    cu_seqlens_q: torch.Tensor
    cu_seqlens_k: torch.Tensor
    max_seqlen_q: int
    max_seqlen_k: int
    rows_q: torch.Tensor
    rows_k: torch.Tensor
    dense: bool


def layout(counted: Counted, host: HostCounts) -> VarlenLayout:
    """The varlen layout of ``counted``, from the numbers ``fetch`` read (no further sync)."""
    tokens = counted.tokens
    batch = tokens.keep_q.shape[0]
    every_token = host.total_q == tokens.keep_q.numel() and host.total_k == tokens.keep_k.numel()
    one_per_row = tokens.rows_are_sequences or (batch == 1 and host.sequences == 1)
    return VarlenLayout(
        cu_seqlens_q=_cu_seqlens(counted.count_q[:host.sequences]),
        cu_seqlens_k=_cu_seqlens(counted.count_k[:host.sequences]),
        max_seqlen_q=host.max_seqlen_q, max_seqlen_k=host.max_seqlen_k,
        rows_q=torch.nonzero_static(tokens.keep_q.flatten(), size=host.total_q).flatten(),
        rows_k=torch.nonzero_static(tokens.keep_k.flatten(), size=host.total_k).flatten(),
        dense=every_token and one_per_row)


def _cu_seqlens(counts: torch.Tensor) -> torch.Tensor:
    return F.pad(counts.cumsum(0), (1, 0)).to(_CU_SEQLENS)


def gather(t: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """(B, S, H, D) (any strides) -> (len(rows), H, D) contiguous: the rows of the flattened batch."""
    seqlen = t.shape[1]
    return t[rows // seqlen, rows % seqlen]


def scatter(packed: torch.Tensor, rows: torch.Tensor, batch: int, seqlen: int) -> torch.Tensor:
    """(total, H, D) -> (B, S, H, D) contiguous, zero in every row not in ``rows`` (padding)."""
    flat = packed.new_zeros(batch * seqlen, *packed.shape[1:])
    return flat.index_copy(0, rows, packed).view(batch, seqlen, *packed.shape[1:])
