"""Per-instruction warp-stall samples from a source-page export of tools/ncu_sass.sh:

    python3 tools/ncu_stalls.py FILE.csv[.gz] [--range FIRST LAST] [--min-fraction 0.003]
    python3 tools/ncu_stalls.py FILE.csv[.gz] --opcodes

Prints the total sample count, then per SASS instruction (its index in the export) that has at least
min-fraction of the samples, and every wgmma, barrier and mbarrier instruction, its share of the
samples and its three largest stall reasons. --opcodes: the kernel's instruction mix instead, warp
instructions executed and samples per opcode (the mnemonic without its predicate), largest first,
to set two kernels' mixes side by side. Runs on the CPU."""
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


def opcode(source: str) -> str:
    """The mnemonic of a SASS line: "@!P0 FFMA R1, ..." -> "FFMA", "MUFU.EX2 R6, R7" -> "MUFU.EX2"."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def opcode_lines(header, rows) -> list[str]:
    """Warp instructions executed and samples per opcode, largest first, with their shares."""
    ix = {h: i for i, h in enumerate(header)}
    executed: dict[str, int] = {}
    sampled: dict[str, int] = {}
    for r in rows:
        op = opcode(r[ix["Source"]])
        executed[op] = executed.get(op, 0) + int(r[ix["Instructions Executed"]] or 0)
        sampled[op] = sampled.get(op, 0) + int(r[ix["# Samples"]] or 0)
    n, m = sum(executed.values()), sum(sampled.values())
    out = [f"instructions executed {n}, samples {m}"]
    for op in sorted(executed, key=lambda o: -executed[o]):
        if executed[op] or sampled[op]:
            out.append(f"{op:24s} {executed[op]:14d} {100 * executed[op] / max(n, 1):6.2f}%"
                       f" {100 * sampled[op] / max(m, 1):6.2f}% of samples")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=pathlib.Path)
    ap.add_argument("--range", nargs=2, type=int, metavar=("FIRST", "LAST"))
    ap.add_argument("--min-fraction", type=float, default=0.003)
    ap.add_argument("--opcodes", action="store_true", help="the instruction mix per opcode instead")
    a = ap.parse_args()
    header, rows = read(a.path)
    if a.opcodes:
        print("\n".join(opcode_lines(header, rows)))
        return
    first, last = a.range or (0, None)
    print("\n".join(lines(header, rows, first, last, a.min_fraction)))


if __name__ == "__main__":
    main()
