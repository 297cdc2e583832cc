"""Per-instruction warp-stall samples from an ncu source-page export (run.sh writes them):
    python3 stalls.py d128_s4096_c1.csv.gz [first_index last_index min_fraction]
Prints, per SASS instruction with at least min_fraction of all samples (and every wgmma, barrier and
mbarrier instruction), its share of the samples and its top three stall reasons."""
import csv, gzip, sys
rows = list(csv.reader(gzip.open(sys.argv[1], 'rt')))
hdr = rows[1]; data = rows[2:]
ix = {h: i for i, h in enumerate(hdr)}
stall_cols = [h for h in hdr if h.startswith('stall_') and '(Not Issued)' not in h]
tot = sum(int(r[ix['# Samples']] or 0) for r in data)
print('total samples', tot)
# print all with index, samples, top stall reasons
lo = int(sys.argv[2]) if len(sys.argv) > 2 else 0
hi = int(sys.argv[3]) if len(sys.argv) > 3 else len(data)
thr = float(sys.argv[4]) if len(sys.argv) > 4 else 0.003
for i, r in enumerate(data):
    if not (lo <= i < hi): continue
    s = int(r[ix['# Samples']] or 0)
    src = r[ix['Source']].strip()
    if s / tot >= thr or src.startswith(('HGMMA','WARPGROUP','BAR','SYNCS')):
        reasons = sorted(((int(r[ix[c]] or 0), c[6:]) for c in stall_cols), reverse=True)[:3]
        print(f"{i:5d} {100*s/tot:5.2f}% {src[:70]:70s} " + " ".join(f"{n}:{v}" for v, n in reasons if v))
