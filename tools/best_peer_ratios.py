"""fa3lite's ratio to the better of cuDNN and FA4 per cell of a bench run's results.csv.

Usage: python tools/best_peer_ratios.py results.csv
One line per (mode, d, mask): for each sequence length, fa3lite's TFLOP/s over the better peer's
(with both TFLOP/s and which peer), and for the backward the deterministic row's ratio to the default
one; then how many cells reach 1.05 (issues 8 and 9's bar).
"""
import collections
import csv
import sys

PEERS = {"cudnn": "cuDNN", "fa4": "FA4"}
BAR = 1.05


def lines(path):
    """The report as a list of lines (see the module docstring)."""
    out = []
    tflops = collections.defaultdict(dict)
    for r in csv.DictReader(open(path)):
        if r["status"] == "ok":
            tflops[(r["mode"], int(r["head_dim"]), r["mask"], int(r["seqlen"]))][r["impl"]] = float(r["tflops"])
    reached, cells = collections.Counter(), collections.Counter()
    for mode, d, mask in sorted({k[:3] for k in tflops}, key=lambda k: (k[0] != "fwd", k[1], k[2] != "full")):
        parts = []
        for seqlen in sorted(s for (m, dd, mk, s) in tflops if (m, dd, mk) == (mode, d, mask)):
            t = tflops[(mode, d, mask, seqlen)]
            peers = {p: t[p] for p in PEERS if p in t}
            if "fa3lite" not in t or not peers:
                continue
            peer = max(peers, key=peers.get)
            ratio = t["fa3lite"] / peers[peer]
            cells[mode] += 1
            reached[mode] += ratio >= BAR
            part = f"{ratio:.3f} ({t['fa3lite']:.0f}/{peers[peer]:.0f} {PEERS[peer]})"
            if mode == "bwd" and "fa3lite_det" in t:
                part += f" det {t['fa3lite_det'] / t['fa3lite']:.3f}"
            parts.append(part)
        out.append(f"{mode} {d} {mask} " + " | ".join(parts))
    out.append(f"cells >= {BAR}: {dict(reached)} of {dict(cells)}")
    return out


if __name__ == "__main__":
    print("\n".join(lines(sys.argv[1])))
