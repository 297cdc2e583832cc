set -x
nvidia-smi --query-gpu=name,driver_version --format=csv
python3 -c "import torch, cuda.core, cuda.bindings, numba_cuda; print(torch.__version__, cuda.core.__version__, cuda.bindings.__version__)"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c
FA3LITE_DEBUG=1 timeout 180 python3 tools/fwd_smoke.py 2>&1 | tee $OUT/smoke_debug.log
timeout 120 python3 tools/fwd_smoke.py --bench 2>&1 | tee $OUT/smoke_release.log
