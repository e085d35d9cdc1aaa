#!/usr/bin/env bash
# run_gpu_tests.sh [LOGDIR] [BENCHMARK ARGS...] -- runs the GPU test binary,
# then the benchmark, from a bundle made by build_bundle.sh (this script
# sits in the bundle's root). Logs go to LOGDIR (default: the bundle dir);
# the last lines printed are the test counts and the benchmark summary.
# Exit status: non-zero if any test or benchmark check failed (or timed
# out: GPU_TEST_TIMEOUT / GPU_BENCH_TIMEOUT seconds, default 600 / 900).
# Without a device both report SKIPPED and exit 0.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
logs=${1:-$here}
shift || true
mkdir -p "$logs"
nvidia-smi --query-gpu=name,uuid,memory.total,clocks.sm,clocks.max.sm,power.draw --format=csv >"$logs/nvidia_smi.txt" 2>&1 || true
timeout "${GPU_TEST_TIMEOUT:-600}" "$here/run" gpu_kernels_test --gtest_output=xml:"$logs/gpu_kernels_test.xml" >"$logs/gpu_kernels_test.log" 2>&1
test_status=$?
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|tests? (FAILED|SKIPPED)|SKIPPED: no CUDA' "$logs/gpu_kernels_test.log"
grep -E '^\[  FAILED  \]' "$logs/gpu_kernels_test.log" | sort -u
timeout "${GPU_BENCH_TIMEOUT:-900}" "$here/run" gpu_benchmark "$@" >"$logs/gpu_benchmark.log" 2>&1
bench_status=$?
sed -n '/==== summary/,$p' "$logs/gpu_benchmark.log"
[ $bench_status -eq 0 ] || tail -5 "$logs/gpu_benchmark.log"
echo "gpu_kernels_test exit $test_status, gpu_benchmark exit $bench_status"
[ $test_status -eq 0 ] && [ $bench_status -eq 0 ]
