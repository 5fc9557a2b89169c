#!/bin/sh
# Everything one GPU-machine call does, in a dwconv build tree (the device tool's
# .device/remote runs it after building): the GPU suite, the conversion proof, the
# bench, the shape sweep, compute-sanitizer on the quick suite, and Nsight Compute's
# view of chosen cases. Outputs go to $OUT (default /tmp/out). Steps: any of "check
# conv silu bench sweep sanitize ncu" (default: all but silu). silu: the GPU silu
# against the scalar one for every float, the reciprocal for every divisor, and its
# timing against 0.1's (bench/gpu/silu_exhaustive.cu; about a minute). Knobs, so that a
# call fits its time and the device tool's 8 returned files:
#   CHECK_TESTS      default "check_gpu check_gpu_emulated"
#   CHECK_TIMEOUT    seconds per test, default 240
#   SANITIZE_TOOLS   default "memcheck racecheck"; SANITIZE_TIMEOUT default 150
#   BENCH_KERNELS    kernel families the bench also times forced (default generic)
#   BENCH_CASES      bench cases to run (default all), e.g. "small_1x512x8192 ref_bf16"
#   SWEEP_ARGS       extra arguments of sweep.py (e.g. "--count 200 --no-torch");
#                    SWEEP_TIMEOUT seconds, default 480
#   NCU_CASES        the bench cases ncu profiles
OUT=${OUT:-/tmp/out}
steps=${*:-check conv bench sweep sanitize ncu}
src=$(pwd)
log() { echo "== $* ($(date +%T))"; }
for step in $steps; do
  case $step in
  check)
    log "GPU suite"
    tests=${CHECK_TESTS:-check_gpu check_gpu_emulated}
    make -j"$(nproc)" $(for t in $tests; do echo tests/$t; done) >"$OUT/check_build.txt" 2>&1 ||
      tail -n 20 "$OUT/check_build.txt"
    for t in $tests; do
      DWCONV_MODULE_PATH="$src/src/.libs/dwconv" timeout "${CHECK_TIMEOUT:-240}" tests/$t >"$OUT/$t.txt" 2>&1
      echo "$t: exit $?"; tail -n 12 "$OUT/$t.txt"
    done ;;
  silu)
    log "silu: every float on the device against the scalar function"
    nvcc -O3 --fmad=false -gencode arch=compute_90,code=sm_90 -Xcompiler -ffp-contract=off \
      -I"$src/include" -I"$src/src/common" -I"$src/src/cuda" "$src/bench/gpu/silu_exhaustive.cu" \
      -o /tmp/silu_exhaustive && /tmp/silu_exhaustive | tee "$OUT/silu_exhaustive.txt"
    command -v cuobjdump >/dev/null &&   # the two tiny kernels, for instruction counts
      cuobjdump -sass /tmp/silu_exhaustive | awk '/Function : .*sass_silu_(new|old)/ {p=1; print; next}
        /Function :/ {p=0} p' >"$OUT/silu_sass.txt" ;;
  conv)
    log "conversion instructions against the shared functions"
    nvcc -arch=sm_90 -O3 --fmad=false -I"$src/src/common" -I"$src/src/cuda" \
      "$src/bench/gpu/conversions.cu" -o /tmp/conversions && /tmp/conversions ;;
  bench)
    log "bench"
    PYTHONUNBUFFERED=1 python3 "$src/bench/gpu/bench_gpu.py" --json "$OUT/bench.json" \
      --markdown "$OUT/bench.md" --kernels "${BENCH_KERNELS:-generic}" \
      $(for c in $BENCH_CASES; do echo --case "$c"; done) ;;
  sweep)
    log "shape sweep"
    # shellcheck disable=SC2086 # SWEEP_ARGS is a list of arguments
    PYTHONUNBUFFERED=1 timeout "${SWEEP_TIMEOUT:-480}" python3 "$src/bench/gpu/sweep.py" \
      --json "$OUT/sweep.json" --markdown "$OUT/sweep.md" $SWEEP_ARGS >"$OUT/sweep.txt" 2>&1
    echo "sweep: exit $?"; tail -n 12 "$OUT/sweep.txt" ;;
  sanitize)
    [ -x tests/check_gpu ] || make -j"$(nproc)" tests/check_gpu >"$OUT/check_build.txt" 2>&1 ||
      tail -n 20 "$OUT/check_build.txt"
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
      log "compute-sanitizer $tool (quick suite)"
      DWCONV_TEST_QUICK=1 DWCONV_MODULE_PATH="$src/src/.libs/dwconv" timeout "${SANITIZE_TIMEOUT:-150}" \
        compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 tests/check_gpu \
        >"$OUT/$tool.txt" 2>&1
      echo "exit $?"; tail -n 6 "$OUT/$tool.txt"
    done ;;
  ncu)
    for c in ${NCU_CASES:-ref_bf16 causal4_bf16_nlc dilation4_k3 k31_pad15}; do
      log "ncu $c"
      timeout 60 ncu --clock-control none -k regex:dwconv --launch-skip 3 --launch-count 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
        --section LaunchStats python3 "$src/bench/gpu/bench_gpu.py" --case "$c" --reps 3 \
        --no-oracle >"$OUT/ncu_$c.txt" 2>&1
      grep -E "Duration|Throughput|Achieved Occupancy|Registers|Block Limit|Mem Busy|L1/TEX Hit|L2 Hit" \
        "$OUT/ncu_$c.txt" | head -n 20
    done ;;
  esac
done
