#!/usr/bin/env bash
# One device round for kernel speed (issues 8, 9), logs in $OUT. Steps, in the order given:
#   tests     gpu_tests.log: the GPU test suite (-m gpu), release build
#   debug     debug_tests.log: FA3LITE_DEBUG=1 (bounded mbarrier waits trap) over DEBUG_TESTS, -k DEBUG_K
#             (unset: causal; set empty: every test)
#   det       det_stress.log: tools/det_stress.py --head-dim DET_DIMS --runs 20 (bitwise determinism)
#   sanitize  san_<tool>_fwd.log / san_<tool>_bwd.log: compute-sanitizer SANITIZE_TOOLS over
#             tools/fwd_sanitize.py and tools/sanitize_grid.py --quick
#   race      race_<tool>.log: compute-sanitizer RACE_TOOLS (default racecheck, synccheck, memcheck) over
#             tools/race_bwd.py (the backward's barriers and its dQ hand-offs)
#   ab        bench_before/ bench_after/: python -m fa3lite.bench (BENCH_ARGS) against _before/ (a
#             git-ignored copy of an earlier commit's fa3lite/ and cuda_src/: carry it) and this tree
#   bench     bench/: python -m fa3lite.bench BENCH_ARGS
#   ncu       ncu_metrics.txt and <case>.csv.gz per NCU_CASES entry ("mode d S causal impl", entries
#             separated by ';'): the case's main kernel only (NCU_KERNELS, an ncu -k filter; default
#             ours and FA4's forward or backward kernel as the mode says), metrics (NCU_EXTRA_METRICS adds
#             some, e.g. breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed), then warp-stall
#             samples per SASS instruction (the source page as CSV, read by tools/ncu_stalls.py; NCU_SOURCE=0
#             skips them)
#   final     final.tgz (final/bf16 and final/fp16: one file, as the device tool brings back at most
#             eight): the session's final grid with FA4 (after peers_b): bf16 forward and backward with
#             the deterministic rows, feature rows and host table, 5 rotated rounds; then the fp16
#             backward (FINAL_LIMIT, default 440 s for the bf16 grid; FINAL_DTYPES, default "bf16 fp16")
#   peers_a   FA4 staging, call 1 of 2 (carry .peers/a): the first wheel part to /root/peers
#   peers_b   FA4 staging, call 2 (carry .peers/b, right after call 1): installs FA4 for the later steps
#   peers_part / peers_last   the same over tools/stage_fa4_parts.sh's .peers/p1 .. pN (when the tree
#             and a part of stage-fa4.sh's exceed the carry limit): each call but the last leaves its
#             part in /root/peers, the last (carry .peers/pN) installs FA4
#   FA4 is on PYTHONPATH for the later steps of the same invocation only (`peers_last final`,
#   `peers_last bench`): a bench started by another command after it does not see it.
# Usage on the device: bash tools/speed_round.sh [steps...]   (default: tests sanitize ab)
set -u
cd "$(dirname "$0")/.."
# This tree first on the path of every step (peers_b puts FA4 ahead of it for the later steps).
export PYTHONUNBUFFERED=1 FA3LITE_CACHE_DIR=/tmp/fa3c PYTHONPATH=$PWD:${PYTHONPATH:-}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
steps=${*:-tests sanitize ab}
BENCH_ARGS=${BENCH_ARGS:---mode bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k --impl fa3lite,cudnn}
QUIET="--no-host-time --no-compile-time --no-odd-check --no-plots"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for step in $steps; do
  case $step in
    tests)
      timeout "${TEST_LIMIT:-300}" python3 -m pytest -q -p no:cacheprovider -rf --tb=short -m gpu tests \
        > "$OUT/gpu_tests.log" 2>&1; echo "== tests rc=$? $(tail -n 1 "$OUT/gpu_tests.log")" ;;
    sanitize)
      for tool in ${SANITIZE_TOOLS:-racecheck synccheck memcheck}; do
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool "$tool" \
          --report-api-errors no --print-limit 10 python3 tools/fwd_sanitize.py > "$OUT/san_${tool}_fwd.log" 2>&1
        echo "== $tool fwd rc=$? $(tail -n 1 "$OUT/san_${tool}_fwd.log")"
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool "$tool" \
          --report-api-errors no --print-limit 10 python3 tools/sanitize_grid.py --quick > "$OUT/san_${tool}_bwd.log" 2>&1
        echo "== $tool bwd rc=$? $(tail -n 1 "$OUT/san_${tool}_bwd.log")"
      done ;;
    ab)
      if [ -d _before/fa3lite ]; then
        PYTHONPATH=$PWD/_before:$PYTHONPATH timeout 240 python3 -m fa3lite.bench $BENCH_ARGS $QUIET --out "$OUT/bench_before" \
          > "$OUT/bench_before.log" 2>&1; echo "== bench before rc=$?"
      fi
      timeout 240 python3 -m fa3lite.bench $BENCH_ARGS $QUIET --out "$OUT/bench_after" \
        > "$OUT/bench_after.log" 2>&1; echo "== bench after rc=$?" ;;
    bench)
      timeout "${BENCH_LIMIT:-500}" python3 -m fa3lite.bench $BENCH_ARGS --out "$OUT/bench" \
        > "$OUT/bench.log" 2>&1; echo "== bench rc=$?" ;;
    debug)
      FA3LITE_DEBUG=1 timeout "${DEBUG_LIMIT:-150}" python3 -m pytest -q -x -p no:cacheprovider \
        ${DEBUG_TESTS:-tests/test_fwd_gpu.py tests/test_bwd_gpu.py} -k "${DEBUG_K-causal}" > "$OUT/debug_tests.log" 2>&1
      echo "== debug tests rc=$? $(tail -n 1 "$OUT/debug_tests.log")" ;;
    det)
      timeout 60 python3 tools/det_stress.py --head-dim "${DET_DIMS:-64,128,256}" --runs 20 \
        > "$OUT/det_stress.log" 2>&1; echo "== det_stress rc=$?"; tail -n 2 "$OUT/det_stress.log" ;;
    race)
      for tool in ${RACE_TOOLS:-racecheck synccheck memcheck}; do
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 compute-sanitizer --tool "$tool" \
          --report-api-errors no python3 tools/race_bwd.py > "$OUT/race_${tool}.log" 2>&1
        echo "== race_bwd $tool rc=$? $(tail -n 1 "$OUT/race_${tool}.log")"
      done ;;
    ncu)
      metrics=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
      metrics=$metrics,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
      metrics=$metrics,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
      metrics=$metrics${NCU_EXTRA_METRICS:+,$NCU_EXTRA_METRICS}
      IFS=';' read -ra cases <<< "${NCU_CASES:-bwd 64 4096 0 fa3lite}"
      for c in "${cases[@]}"; do
        set -- $c
        tag=$1_d$2_s$3_c$4_$5
        if [ "$1" = fwd ]; then role=Forward; else role=Backward; fi
        kernels=${NCU_KERNELS:-regex:fa3lite_$1\$|kernel_cutlass.*${role}Sm90}
        echo "===== CASE $c" >> "$OUT/ncu_metrics.txt"
        timeout 120 ncu --clock-control none --profile-from-start off -k "$kernels" \
          --metrics "$metrics" \
          python3 tools/ncu_probe.py $c >> "$OUT/ncu_metrics.txt" 2>&1
        if [ "${NCU_SOURCE:-1}" = 1 ]; then   # 0: the metrics only, no per-instruction samples
          timeout 200 ncu --clock-control none --profile-from-start off -k "$kernels" \
            --launch-count 1 \
            --section SourceCounters --section WarpStateStats --import-source no -f -o "/tmp/$tag" \
            python3 tools/ncu_probe.py $c > "$OUT/$tag.log" 2>&1
          timeout 100 ncu -i "/tmp/$tag.ncu-rep" --page source --csv --print-source sass 2>> "$OUT/$tag.log" \
            | gzip -c > "$OUT/$tag.csv.gz"
        fi
        echo "== ncu $c: $(grep -E 'duration|hmma' "$OUT/ncu_metrics.txt" | tail -n 2 | tr -s ' ' | tr '\n' ' ')"
      done
      # every case's kernels and metrics, in the call's output
      grep -E "CASE|fa3lite_|kernel_cutlass|duration|hmma|issue_active|inst_executed |lts__t|pipe_xu|elapsed.avg" \
        "$OUT/ncu_metrics.txt" | head -n 120 ;;
    final)
      mkdir -p "$OUT/final"
      case " ${FINAL_DTYPES:-bf16 fp16} " in *" bf16 "*)
        timeout "${FINAL_LIMIT:-440}" python3 -m fa3lite.bench --mode fwd,bwd --head-dim 64,128,256 --causal both \
          --seqlen 1k,4k,16k --deterministic --impl fa3lite,cudnn,fa4 --rounds 5 --no-compile-time --no-plots \
          --time-budget $(( ${FINAL_LIMIT:-440} - 40 )) --out "$OUT/final/bf16" > "$OUT/final/bf16.log" 2>&1
        echo "== final bf16 rc=$?" ;;
      esac
      case " ${FINAL_DTYPES:-bf16 fp16} " in *" fp16 "*)
        timeout 130 python3 -m fa3lite.bench --mode bwd --head-dim 64,128,256 --causal both --seqlen 1k,4k,16k \
          --dtype fp16 --impl fa3lite,cudnn,fa4 --no-compile-time --no-plots --no-host-time --no-features \
          --time-budget 110 --out "$OUT/final/fp16" > "$OUT/final/fp16.log" 2>&1
        echo "== final fp16 rc=$?" ;;
      esac
      # the ratio to the better peer per cell, in the call's output and beside the archive
      for f in "$OUT"/final/*/results.csv; do
        [ -f "$f" ] && python3 tools/best_peer_ratios.py "$f" | tee "$OUT/ratios_$(basename "$(dirname "$f")").txt"
      done
      # one file: the device tool brings back at most eight
      tar czf "$OUT/final.tgz" -C "$OUT" final && rm -rf "$OUT/final" ;;
    peers_a)
      mkdir -p /root/peers && cp .peers/a/* /root/peers/ && echo "== peers part a staged" ;;
    peers_b)
      source .peers/b/install.sh > "$OUT/install.log" 2>&1; echo "== FA4 installed rc=$?" ;;
    peers_part)
      mkdir -p /root/peers && cp .peers/p*/big.* /root/peers/ && echo "== peers part staged: $(ls /root/peers)" ;;
    peers_last)
      source .peers/p*/install.sh > "$OUT/install.log" 2>&1; echo "== FA4 installed rc=$?" ;;
    *)
      echo "== unknown step $step" ;;
  esac
done
