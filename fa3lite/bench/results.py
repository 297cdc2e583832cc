"""What a benchmark run produces: one record per (implementation, cell, mode), one per
(implementation, feature case, mode), one per (implementation, decode case) in a --decode run, and
the side tables."""
from __future__ import annotations

from dataclasses import dataclass, field

from .decode_cases import DecodeCase, achieved_gbs
from .feature_cases import FeatureCase
from .flops import cell_flops, tflops
from .grid import Cell
from .timing import Stats

OK = "ok"
WRONG = "wrong"
UNSUPPORTED = "unsupported"
ABSENT = "absent"
OOM = "oom"
SKIPPED = "skipped"
STATUSES = (OK, WRONG, UNSUPPORTED, ABSENT, OOM, SKIPPED)
STATUS_WORDS = {WRONG: "WRONG", UNSUPPORTED: "unsup", ABSENT: "absent", OOM: "OOM", SKIPPED: "skip"}  # in tables


def _check_status(status: str, stats: Stats | None) -> None:
    if status not in STATUSES:
        raise ValueError(f"status: expected one of {STATUSES}, got {status!r}")
    if (status == OK) != (stats is not None):
        raise ValueError(f"stats: given exactly when status is ok (status {status!r})")


class _Checked:
    """Records with a status and stats: stats exactly when the status is OK."""

    def __post_init__(self):
        _check_status(self.status, self.stats)


class _Timed(_Checked):
    """Records that count FLOPs (a `flops` property): TFLOP/s of the median time."""

    @property
    def tflops(self) -> float | None:
        return tflops(self.flops, self.stats.median) if self.stats else None


@dataclass(frozen=True)
class Measurement(_Timed):
    """One implementation on one cell in one mode; stats only when status is OK. deterministic: the
    implementation's Impl.deterministic (its backward is the deterministic one), None where it has none."""

    impl: str
    cell: Cell
    mode: str
    status: str
    stats: Stats | None = None
    reason: str = ""
    deterministic: bool | None = None

    @property
    def flops(self) -> float:
        return cell_flops(self.cell, self.mode)




@dataclass(frozen=True)
class FeatureMeasurement(_Timed):
    """One implementation on one feature case (feature_cases.FeatureCase) in one mode; stats only
    when status is OK; flops counted on the pairs the case's mask leaves. deterministic as in
    Measurement."""

    impl: str
    case: FeatureCase
    mode: str
    status: str
    stats: Stats | None = None
    reason: str = ""
    deterministic: bool | None = None

    @property
    def flops(self) -> float:
        return self.case.flops(self.mode)


@dataclass(frozen=True)
class DecodeMeasurement(_Checked):
    """One implementation on one decode case (decode_cases.DecodeCase), a forward without grad;
    stats only when status is OK; gbs: the case's K/V bytes over the median time."""

    impl: str
    case: DecodeCase
    status: str
    stats: Stats | None = None
    reason: str = ""

    @property
    def gbs(self) -> float | None:
        return achieved_gbs(self.case.kv_bytes, self.stats.median) if self.stats else None


@dataclass(frozen=True)
class HostTime:
    """Host microseconds per call at the tiny shape (issue only, and issue + GPU).

    mode: "fwd" (inputs without grad), "fwd_grad" (inputs that require grad, forward only) or
    "fwd_bwd" (forward and torch.autograd.grad: one training step of the op). impl names an
    implementation, or an fa3lite entry: "fa3lite_sdpa" (fa3lite.scaled_dot_product_attention),
    "fa3lite_compiled" (inside torch.compile, the custom-op path), "fa3lite_graph" (replaying a
    captured CUDA graph of the call). Entries in torch's (B, H, S, d) layout (SDPA's backends,
    fa3lite_sdpa, Flex) are timed on such views of the inputs, made once (impls.Bound.torch_layout).
    """

    impl: str
    status: str
    host_us: float | None = None
    wall_us: float | None = None
    reason: str = ""
    mode: str = "fwd"


@dataclass(frozen=True)
class CompileTime:
    """One fa3lite variant: first call with a cold cache, first call of a new process with the disk
    cache filled, and a call with everything in memory (seconds, seconds, milliseconds)."""

    head_dim: int
    causal: bool
    dtype: str
    kind: str  # "fwd" or "bwd"
    status: str
    cold_s: float | None = None
    disk_cached_s: float | None = None
    warm_ms: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class CheckRecord:
    """A correctness check: which implementation, where, and its verdicts as text."""

    impl: str
    head_dim: int
    causal: bool
    seqlen: int
    status: str
    detail: str


@dataclass
class BenchRun:
    """Everything one run produced; `complete` is False when it was cut short."""

    meta: dict
    config: dict
    self_check: list[str] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)
    measurements: list[Measurement] = field(default_factory=list)
    features: list[FeatureMeasurement] = field(default_factory=list)
    decode: list[DecodeMeasurement] = field(default_factory=list)
    copy_bandwidth_gbs: float | None = None  # a --decode run's device copy, bytes read + written
    checks: list[CheckRecord] = field(default_factory=list)
    host_times: list[HostTime] = field(default_factory=list)
    compile_times: list[CompileTime] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    complete: bool = True

    @classmethod
    def begin(cls, meta: dict, config: dict, check, absent: dict[str, str]) -> "BenchRun":
        """A run before any measurement: its environment, configuration, the reference self-check
        (check.lines, check.ok: its verdict is the last line, and a note says when it failed) and the
        implementations that are absent ({name: reason})."""
        run = cls(meta=meta, config=config,
                  self_check=list(check.lines) + [f"self-check {'passed' if check.ok else 'FAILED'}"], absent=absent)
        if not check.ok:
            run.notes.append("the reference self-check FAILED: see self_check in results.json")
        return run


def _timing_fields(m) -> dict:
    """The fields a grid and a feature measurement share: mode, status, timing statistics, FLOPs
    counted, TFLOP/s, the reason; "deterministic" only where the measurement has it."""
    fields = {
        "mode": m.mode,
        "status": m.status,
        "ms_median": m.stats.median if m.stats else None,
        "ms_p20": m.stats.p20 if m.stats else None,
        "ms_p80": m.stats.p80 if m.stats else None,
        "reps": m.stats.reps if m.stats else None,
        "gflop": m.flops / 1e9,
        "tflops": m.tflops,
        "reason": m.reason,
    }
    if m.deterministic is not None:
        fields["deterministic"] = m.deterministic
    return fields


def measurement_row(m: Measurement) -> dict:
    """Flat dict of one measurement (no ratio; that needs the baseline's record). "deterministic"
    only where the measurement has it (fa3lite's implementations)."""
    c = m.cell
    row = {
        "impl": m.impl,
        "head_dim": c.head_dim,
        "mask": c.mask,
        "seqlen": c.seqlen,
        "batch": c.batch,
        "heads": c.heads,
        "dtype": c.dtype,
    }
    return row | _timing_fields(m)


def feature_row(m: FeatureMeasurement) -> dict:
    """Flat dict of one feature measurement (no ratios; those need the other rows). window is
    [left, right] ([-1, -1]: none); seqlens lists every sequence's length."""
    c = m.case
    row = {
        "impl": m.impl,
        "kind": c.kind,
        "head_dim": c.head_dim,
        "heads": c.heads,
        "mask": c.mask,
        "window": list(c.window),
        "tokens": c.tokens,
        "n_seqs": c.n_seqs,
        "max_seqlen": c.max_seqlen,
        "seqlens": list(c.seqlens),
        "dtype": c.dtype,
    }
    return row | _timing_fields(m)


def decode_row(m: DecodeMeasurement) -> dict:
    """Flat dict of one decode measurement (no copy fraction or ratios: those need the run's copy
    bandwidth and the other rows). page_size is None for a contiguous cache; kv_bytes counts K and V
    only."""
    c = m.case
    return {
        "impl": m.impl,
        "sq": c.sq,
        "batch": c.batch,
        "cache_len": c.cache_len,
        "heads_q": c.heads_q,
        "heads_kv": c.heads_kv,
        "head_dim": c.head_dim,
        "layout": "paged" if c.paged else "contiguous",
        "page_size": c.page_size if c.paged else None,
        "dtype": c.dtype,
        "status": m.status,
        "ms_median": m.stats.median if m.stats else None,
        "ms_p20": m.stats.p20 if m.stats else None,
        "ms_p80": m.stats.p80 if m.stats else None,
        "reps": m.stats.reps if m.stats else None,
        "kv_bytes": c.kv_bytes,
        "gbs": m.gbs,
        "reason": m.reason,
    }
