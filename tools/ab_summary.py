"""Median TFLOP/s per (mode, d, mask, S) and tag from tools/ab_time.py's JSON lines, each tag's
ratio to the first one's.  Usage: python3 tools/ab_summary.py ab.jsonl tag0 tag1 ..."""
import collections
import json
import statistics
import sys


def main(path: str, tags: list[str]) -> None:
    runs = collections.defaultdict(list)
    for line in open(path):
        if line.startswith("{"):
            r = json.loads(line)
            runs[(r["mode"], r["d"], r["causal"], r["S"], r["tag"])].append(r["tflops"])
    cells = sorted({k[:4] for k in runs})
    print(f"{'mode':5} {'d':>4} {'mask':6} {'S':>6} " + " ".join(f"{t:>14}" for t in tags) + "   runs")
    for mode, d, causal, s in cells:
        med = [statistics.median(runs[(mode, d, causal, s, t)]) if runs.get((mode, d, causal, s, t)) else float("nan")
               for t in tags]
        cols = " ".join(f"{m:7.1f} ({m / med[0]:.3f})" for m in med)
        raw = " | ".join(" ".join(f"{x:.0f}" for x in runs.get((mode, d, causal, s, t), [])) for t in tags)
        print(f"{mode:5} {d:4d} {'causal' if causal else 'full':6} {s:6d} {cols}   {raw}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["before", "after"])
