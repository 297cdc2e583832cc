"""First-call compile time of each fa3lite variant, cold and cached, measured in child processes.

fa3lite compiles its kernels with NVRTC on first use and keeps them in a disk cache under
FA3LITE_CACHE_DIR (and in memory). A child process with FA3LITE_CACHE_DIR pointing at a fresh
directory sees a cold cache; a second child on the same directory sees the disk cache filled; a
repeated call inside a child is the in-memory (warm) call. The first variant in each child also
would carry one-time setup (imports, loading NVRTC): the probe does that first and reports it apart.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from .results import OK, SKIPPED, UNSUPPORTED, CompileTime

CACHE_ENV = "FA3LITE_CACHE_DIR"
SETUP_KEY = "setup"


def variants_of(cells) -> list[tuple[int, bool]]:
    """The distinct (head dim, causal) pairs of the grid, in grid order."""
    return list(dict.fromkeys((c.head_dim, c.causal) for c in cells))


def _run_probe(variants, dtype: str, cache_dir: str, timeout_s: float):
    """({(d, causal): record}, error text or '') from one child process."""
    spec = ",".join(f"{d}:{int(c)}" for d, c in variants)
    env = dict(os.environ, **{CACHE_ENV: cache_dir})
    cmd = [sys.executable, "-m", "fa3lite.bench.compile_probe", "--dtype", dtype, "--variants", spec]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    error = ""
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
        if proc.returncode:
            error = f"probe exited {proc.returncode}: " + (stderr.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, _ = proc.communicate()
        error = f"probe timed out after {timeout_s:.0f} s"
    records = {}
    for line in stdout.splitlines():
        try:
            rec = json.loads(line)
            key = SETUP_KEY if "setup_s" in rec else (rec["head_dim"], rec["causal"])
            records[key] = rec
        except (ValueError, KeyError, TypeError):
            continue
    return records, error[:240]


def measure(variants, dtype: str, cache_dir: str, timeout_s: float, runner=_run_probe):
    """Cold, disk-cached and warm times for each variant's forward and backward.

    Returns (records, notes): a CompileTime per (variant, fwd/bwd), and lines on the one-time setup.
    """
    if not variants:
        return [], []
    cold, cold_err = runner(variants, dtype, cache_dir, timeout_s)
    # Only variants the cold child finished are in the cache: any other would compile in the second
    # child and be mislabelled as a disk-cache load.
    cached = [v for v in variants if "fwd_first_s" in cold.get(v, {})]
    disk, disk_err = runner(cached, dtype, cache_dir, timeout_s) if cached else ({}, "")
    out = []
    for d, causal in variants:
        c, k = cold.get((d, causal)), disk.get((d, causal))
        for kind in ("fwd", "bwd"):
            if c is None:
                out.append(CompileTime(d, causal, dtype, kind, SKIPPED, reason=cold_err or "no record from the probe"))
            elif f"{kind}_first_s" not in c:
                reason = c.get(f"{kind}_error") or "forward failed: " + c.get("fwd_error", "?")
                out.append(CompileTime(d, causal, dtype, kind, UNSUPPORTED, reason=reason))
            else:
                disk_s = (k or {}).get(f"{kind}_first_s")
                reason = "" if disk_s is not None else (
                    (k or {}).get(f"{kind}_error") or disk_err or "no disk-cache record")
                out.append(CompileTime(d, causal, dtype, kind, OK, c[f"{kind}_first_s"], disk_s,
                                       c[f"{kind}_warm_ms"], reason))
    notes = []
    if SETUP_KEY in cold:
        disk_setup = disk.get(SETUP_KEY, {}).get("setup_s")
        notes.append(
            f"fa3lite runtime one-time setup before the first compile (imports, NVRTC, source hash): "
            f"{cold[SETUP_KEY]['setup_s']:.2f} s"
            + (f" (second process {disk_setup:.2f} s)" if disk_setup is not None else "")
        )
    return out, notes
