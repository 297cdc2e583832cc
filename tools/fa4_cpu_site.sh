#!/usr/bin/env bash
# FA4 (flash-attn-4) and its CuTe DSL wheels for this machine's Python, installed into .peers/cpu_site
# (ignored by git), for tools/fa4_sass.py: FA4's kernels compiled on a CPU. The versions are the ones
# ../shared/tools/stage-fa4.sh stages on the GPU machine. Run from the project root.
set -euo pipefail
py=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
grep -qx '/.peers/' .git/info/exclude 2>/dev/null || echo '/.peers/' >> .git/info/exclude
rm -rf .peers/cpu_dl .peers/cpu_site && mkdir -p .peers/cpu_dl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .peers/cpu_dl \
  flash-attn-4==4.0.0b36 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
  nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi==0.1.15.post2 \
  torch-c-dlpack-ext==0.1.5 quack-kernels==0.6.5
python3 -m pip install -q --no-index --no-deps --no-compile --target .peers/cpu_site .peers/cpu_dl/*.whl
rm -rf .peers/cpu_dl
echo "FA4 for CPU compiles in .peers/cpu_site (python $py)"
