import time
import torch
import fa3lite
from fa3lite import callkey
from fa3lite.bench.decode import HOST_CASE
from fa3lite.bench.decode_impls import Fa3liteDecode
from fa3lite.bench.decode_inputs import make_inputs

g = torch.Generator(device="cuda").manual_seed(0)
x = make_inputs(HOST_CASE, torch.device("cuda"), g)
print({n: (tuple(getattr(x, n).shape), getattr(x, n).stride(), getattr(x, n).dtype) for n in ("q", "k_cache", "k_new", "append_at")})
bound = Fa3liteDecode(append=True).bind(HOST_CASE, torch.device("cuda"))
with torch.no_grad():
    for _ in range(5):
        bound.call(x)
    plans = [p for p in callkey._passed.values() if p is not None]
    print("plans", [(type(p).__name__, getattr(p, "appends", "-")) for p in plans])
    torch.cuda.synchronize()
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(100):
            bound.call(x)
        print(f"{(time.perf_counter() - t) * 1e4:.1f} us")
        torch.cuda.synchronize()
