"""Per-instruction warp-stall samples from a source-page export of tools/ncu_sass.sh:

    python3 tools/ncu_stalls.py FILE.csv[.gz] [--range FIRST LAST] [--min-fraction 0.003]

Prints the total sample count, then per SASS instruction (its index in the export) that has at least
min-fraction of the samples, and every wgmma, barrier and mbarrier instruction, its share of the
samples and its three largest stall reasons. Runs on the CPU."""
from __future__ import annotations

import argparse
import csv
import gzip
import pathlib

ALWAYS = ("HGMMA", "WARPGROUP", "BAR", "SYNCS")   # shown whatever their share: the sync points


def read(path) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of an ncu source-page CSV (ncu writes one title line above the header)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    start = next(i for i, r in enumerate(rows) if "# Samples" in r)
    return rows[start], rows[start + 1:]


def lines(header, rows, first=0, last=None, min_fraction=0.003) -> list[str]:
    """The report's lines (see the module docstring)."""
    ix = {h: i for i, h in enumerate(header)}
    stalls = [h for h in header if h.startswith("stall_") and "(Not Issued)" not in h]
    samples = [int(r[ix["# Samples"]] or 0) for r in rows]
    total = sum(samples)
    out = [f"total samples {total}"]
    last = len(rows) if last is None else last
    for i, (r, s) in enumerate(zip(rows, samples)):
        src = r[ix["Source"]].strip()
        if not first <= i < last or not (total and s / total >= min_fraction or src.startswith(ALWAYS)):
            continue
        top = sorted(((int(r[ix[c]] or 0), c[len("stall_"):]) for c in stalls), reverse=True)[:3]
        share = 100 * s / total if total else 0.0
        out.append(f"{i:5d} {share:5.2f}% {src[:70]:70s} " + " ".join(f"{n}:{v}" for v, n in top if v))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=pathlib.Path)
    ap.add_argument("--range", nargs=2, type=int, metavar=("FIRST", "LAST"))
    ap.add_argument("--min-fraction", type=float, default=0.003)
    a = ap.parse_args()
    header, rows = read(a.path)
    first, last = a.range or (0, None)
    print("\n".join(lines(header, rows, first, last, a.min_fraction)))


if __name__ == "__main__":
    main()
