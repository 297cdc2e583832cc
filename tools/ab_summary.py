"""Median TFLOP/s per cell and tag from the A/B tools' JSON lines (tools/ab_time.py, varlen_ab.py,
gqa_probe.py), each tag's ratio to the first one's. A cell is a row's own scalar fields but the tag and
the timings ("ms", "tflops"), so every tool's rows group by what they carry.
    python3 tools/ab_summary.py ab.jsonl tag0 tag1 ..."""
import collections
import json
import statistics
import sys

TIMINGS = ("ms", "tflops")


def cell_of(row: dict) -> tuple:
    """(field, value) pairs naming a row's cell: its scalar fields but the tag and the timings."""
    return tuple((k, v) for k, v in row.items()
                 if k != "tag" and k not in TIMINGS and not isinstance(v, (list, dict)))


def main(path: str, tags: list[str]) -> None:
    runs = collections.defaultdict(list)
    for line in open(path):
        if line.startswith("{"):
            r = json.loads(line)
            t = r["tflops"]
            runs[(cell_of(r), r["tag"])].extend(t if isinstance(t, list) else [t])
    cells = sorted({c for c, _ in runs})
    for c in cells:
        med = [statistics.median(runs[(c, t)]) if runs.get((c, t)) else float("nan") for t in tags]
        name = " ".join(f"{k}={v}" for k, v in c)
        cols = " ".join(f"{t} {m:7.1f} ({m / med[0]:.3f})" for t, m in zip(tags, med))
        raw = " | ".join(" ".join(f"{x:.0f}" for x in runs.get((c, t), [])) for t in tags)
        print(f"{name}: {cols}   [{raw}]")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["before", "after"])
