import sys
sys.path.insert(0, "tools")
import torch
from fa3lite import hopper
from fwd_smoke import bench
real = hopper._sm_count
for label, fn in (("persistent", real), ("one-tile-per-cta", lambda d: 10**9), ("persistent-2x", lambda d: 2 * real(d))):
    hopper._sm_count = fn
    print("==", label, flush=True)
    for D, causal, S in ((128, False, 16384), (128, True, 16384), (128, False, 1024), (64, False, 16384)):
        bench(D, causal, S)
