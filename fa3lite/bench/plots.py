"""PNG plots: TFLOP/s against sequence length, one figure per mode, one panel per (head dim, mask),
one line per implementation. matplotlib is optional (the 'bench' extra): without it, no plots."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .report import MODE_LABELS, impl_order
from .results import OK, BenchRun

PANEL_INCHES = (4.6, 3.4)
DPI = 110


def matplotlib_missing() -> str | None:
    """None when matplotlib can be imported, else the reason."""
    try:
        import matplotlib  # noqa: F401
    except Exception as exc:
        return f"matplotlib not importable ({type(exc).__name__}: {exc}); install fa3lite[bench] for plots"
    return None


def write_plots(run: BenchRun, out_dir: Path, labels: dict[str, str]) -> list[Path]:
    """One PNG per mode with timed results: out_dir/plot_<mode>.png. Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = defaultdict(list)  # (mode, d, causal, impl) -> [(S, tflops)]
    for m in run.measurements:
        if m.status == OK:
            series[(m.mode, m.cell.head_dim, m.cell.causal, m.impl)].append((m.cell.seqlen, m.tflops))
    order = impl_order(run, labels)
    colors = {n: plt.get_cmap("tab10")(i % 10) for i, n in enumerate(order)}
    dims = sorted({m.cell.head_dim for m in run.measurements})
    masks = sorted({m.cell.causal for m in run.measurements})
    seqlens = sorted({m.cell.seqlen for m in run.measurements})
    modes = [mode for mode in MODE_LABELS if any(k[0] == mode for k in series)]
    written = []
    for mode in modes:
        fig, axes = plt.subplots(
            len(dims), len(masks), squeeze=False, sharex=True,
            figsize=(PANEL_INCHES[0] * len(masks), PANEL_INCHES[1] * len(dims)),
        )
        for r, d in enumerate(dims):
            for c, causal in enumerate(masks):
                ax = axes[r][c]
                for impl in order:
                    pts = sorted(series.get((mode, d, causal, impl), []))
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3,
                                label=labels.get(impl, impl), color=colors[impl],
                                linewidth=2.2 if impl == "fa3lite" else 1.2)
                ax.set_xscale("log", base=2)
                ax.set_xticks(seqlens)
                ax.set_xticklabels([_short(s) for s in seqlens])
                ax.set_ylim(bottom=0)
                ax.grid(True, alpha=0.3)
                ax.set_title(f"d={d} {'causal' if causal else 'full'}", fontsize=10)
                if c == 0:
                    ax.set_ylabel("TFLOP/s")
                if r == len(dims) - 1:
                    ax.set_xlabel("sequence length")
        handles, names = _legend_entries(axes)
        fig.legend(handles, names, loc="lower center", ncol=min(len(names), 7), fontsize=9, frameon=False)
        meta, cfg = run.meta, run.config
        fig.suptitle(
            f"{MODE_LABELS[mode]}, {cfg.get('dtype')}, {cfg.get('tokens')} tokens/batch, width {cfg.get('width')}"
            f" - {meta.get('device')}, torch {meta.get('torch')}", fontsize=10,
        )
        fig.tight_layout(rect=(0, 0.06, 1, 0.96))
        path = Path(out_dir) / f"plot_{mode}.png"
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        written.append(path)
    return written


def _legend_entries(axes):
    handles, names = [], []
    for row in axes:
        for ax in row:
            for h, n in zip(*ax.get_legend_handles_labels()):
                if n not in names:
                    handles.append(h)
                    names.append(n)
    return handles, names


def _short(seqlen: int) -> str:
    return f"{seqlen // 1024}k" if seqlen % 1024 == 0 else str(seqlen)
