#!/usr/bin/env bash
# FA4 (flash-attn-4) and its CuTe DSL wheels for this machine's Python, installed into .peers/cpu_site
# (ignored by git), for tools/fa4_sass.py: FA4's kernels compiled on a CPU. The pins and platforms are
# read from ../shared/tools/stage-fa4.sh, so the CPU compiles the FA4 the GPU machine benchmarks.
# Run from the project root.
set -euo pipefail
stage=../shared/tools/stage-fa4.sh
[ -f "$stage" ] || { echo "$stage is missing: it holds the FA4 pins"; exit 1; }
mapfile -t pins < <(grep -oE '[a-z0-9][a-z0-9_.-]*==[0-9][a-z0-9_.+-]*' "$stage")
mapfile -t platforms < <(grep -oE -- '--platform [a-z0-9_]+' "$stage" | tr ' ' '\n' | grep -v -- --platform)
[ "${#pins[@]}" -gt 0 ] && [ "${#platforms[@]}" -gt 0 ] || { echo "no pins or platforms found in $stage"; exit 1; }
py=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
grep -qx '/.peers/' .git/info/exclude 2>/dev/null || echo '/.peers/' >> .git/info/exclude
rm -rf .peers/cpu_dl .peers/cpu_site && mkdir -p .peers/cpu_dl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
  "${platforms[@]/#/--platform=}" -d .peers/cpu_dl "${pins[@]}"
python3 -m pip install -q --no-index --no-deps --no-compile --target .peers/cpu_site .peers/cpu_dl/*.whl
rm -rf .peers/cpu_dl
echo "FA4 for CPU compiles in .peers/cpu_site (python $py)"
