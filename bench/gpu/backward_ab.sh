#!/bin/bash
# The GPU backward of two or more builds side by side, on the GPU machine: issue 12's
# cases timed by bench/gpu/backward_bench.c (median of 20 calls against a same-run copy
# of the same traffic), the builds alternating case by case, two passes; then the GPU
# backward suite, compute-sanitizer (quick suite) and ncu on the last build.
#
#   bash bench/gpu/backward_ab.sh OLD NEW [NEWER ...]
#
# Each is a build directory (or a copy) holding src/.libs/libdwconv.so* and
# src/.libs/dwconv/dwconv_cuda.so, the last also tests/check_gpu_backward. Extra
# libraries (libsubunit for the suite): LD_LIBRARY_PATH as usual. PARTS picks what runs
# (default "time check sanitize ncu"), so that a long call can be split in two.
[ $# -ge 2 ] || { echo "usage: $0 OLD NEW [NEWER ...]" >&2; exit 2; }
for b in "$@"; do [ -d "$b" ] || { echo "$0: no build at $b" >&2; exit 2; }; done
new=${!#}
parts=" ${PARTS:-time check sanitize ncu} "
want() { [[ $parts == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
cc -O2 -Iinclude bench/gpu/backward_bench.c -L"$new/src/.libs" -ldwconv -o /tmp/backward_bench || exit 1
run() { b=$1; shift; DWCONV_MODULE_PATH=$b/src/.libs/dwconv LD_LIBRARY_PATH=$b/src/.libs:$LD_LIBRARY_PATH timeout 60 /tmp/backward_bench "$@"; }
cases=(
  "32 512 8192 3 1 1 1 1 zeros none f32 ncl xw"      # the reference problem
  "32 512 8192 3 1 1 1 1 zeros none f32 ncl x"
  "32 512 8192 3 1 1 1 1 zeros none f32 ncl w"
  "32 512 8192 3 1 1 1 1 zeros none bf16 ncl xw"
  "32 512 8192 3 1 1 1 1 zeros none f16 ncl xw"
  "32 512 8192 7 1 1 3 3 reflect relu f32 ncl xwb"
  "4 5120 4096 4 1 1 -1 0 zeros silu f32 ncl xwb"    # causal K4 with bias and silu
  "4 5120 4096 4 1 1 -1 0 zeros silu bf16 ncl xwb"
  "4 5120 4096 4 1 1 -1 0 zeros silu f32 nlc xwb"
  "4 5120 4096 4 1 1 -1 0 zeros silu bf16 nlc xwb"
  "4 5120 4096 4 1 1 -1 0 zeros none bf16 nlc xwb"
  "16 512 4096 31 1 1 15 15 zeros none f32 ncl xw"   # K31, stride 2, dilation 4
  "16 512 4096 31 1 1 15 15 zeros silu f32 ncl xwb"  # wider K (the wide kernel)
  "16 512 4096 31 1 1 15 15 zeros none bf16 ncl xw"
  "16 512 4096 15 1 1 7 7 zeros none f32 ncl xw"
  "16 512 4096 64 1 1 32 31 zeros none f32 ncl xw"
  "32 512 8192 3 2 1 1 1 zeros none f32 ncl xw"
  "32 512 8192 3 1 4 4 4 zeros none f32 ncl xw"
)
for pass in 1 2; do
  want time || break
  for c in "${cases[@]}"; do
    c=${c%%#*}
    for b in "$@"; do echo -n "$(basename "$b"): "; run "$b" $c | sed 's/ ([0-9]* GB\/s of x, dy, dx)//'; done
  done
done
m=$new/src/.libs/dwconv
if want check; then
  echo "== check_gpu_backward ($new, full)"
  DWCONV_MODULE_PATH=$m timeout 300 "$new/tests/check_gpu_backward" 2>&1 | tail -4
fi
want sanitize && for t in memcheck racecheck; do
  echo "== compute-sanitizer $t (quick)"
  DWCONV_TEST_QUICK=1 CK_FORK=no DWCONV_MODULE_PATH=$m timeout 240 compute-sanitizer --tool $t \
    "$new/tests/check_gpu_backward" 2>&1 | tail -3
done
want ncu || exit 0
echo "== ncu (one launch after 3)"
for k in "warp:32 512 8192 3 1 1 1 1 zeros none f32 ncl xw" "warp:32 512 8192 3 2 1 1 1 zeros none f32 ncl xw" \
         "warp:4 5120 4096 4 1 1 -1 0 zeros silu bf16 ncl xwb" "wide:16 512 4096 31 1 1 15 15 zeros none f32 ncl xw" \
         "nlc:4 5120 4096 4 1 1 -1 0 zeros silu bf16 nlc xwb" "nlc:4 5120 4096 4 1 1 -1 0 zeros silu f32 nlc xwb"; do
  echo "-- ${k%%:*} ${k#*:}"
  DWCONV_MODULE_PATH=$m LD_LIBRARY_PATH=$new/src/.libs:$LD_LIBRARY_PATH timeout 120 ncu --clock-control none \
    -k regex:"${k%%:*}" --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section SchedulerStats /tmp/backward_bench ${k#*:} 2>&1 |
    grep -E "Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|Theoretical Occupancy|Registers Per|Shared Memory Per|Block Limit" | head -14
done
