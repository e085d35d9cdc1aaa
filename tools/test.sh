#!/bin/bash
# test.sh -- the whole test run without a GPU; what CI (.ci/run) executes.
#
#   sudo tools/test.sh
#
# First tools/install_deps.sh (root only needed when a Debian package is
# missing), then the suites, in order; a failing suite does not stop the next:
#   layers      tools/check_layers.sh --quiet (no #include goes up a layer, no cycle), and
#               tools/check_layers_test.sh (the same answer in a tree without .git)
#   shell       tools/check_shell.sh --quiet (shellcheck over every shell script, clean)
#   bazel       bazel test //... --keep_going (unit tests; .bazelrc filters tag gpu;
#               CUDA kernels nothing on the CPU side needs are not compiled)
#   cuda-probe  //kernels/cuda:device_probe runs (device count, or "no CUDA device":
#               then SKIP, since nothing was tested)
#   interop     tests/interop/run_interop.sh (circom2/snarkjs against the zkfarm CLI)
#   inputs      tests/interop/run_inputs.sh (input jobs: circom's C++ witness generators
#               on the farm, byte-identical to wasm, bad inputs; both curves)
#   fuzz        tests/fuzz/run_fuzz.sh, when that script exists
#   deploy      tests/deploy/check_deploy.sh (units, compose, k8s, Prometheus rules, dashboards)
#   multihost   tests/multihost/multihost_test.sh (three hosts in network namespaces, HTTP
#               artifacts and witnesses, a coordinator killed; SKIP without netns)
# A suite that tested nothing (exit status 77, the automake convention) is
# SKIP, counted neither as passed nor as failed. The last line is
# "N passed, M failed, K skipped" (suites); the exit status is 0 only when no
# suite failed.
#
# Environment:
#   ZKFARM_SKIP_DEPS=1     do not run install_deps.sh
#   ZKFARM_BAZEL_FLAGS     extra flags for bazel build/test (word-split)
#   ZKFARM_FUZZ_TIMEOUT    seconds the fuzz suite may take (default 900)
#   ZKFARM_BUILD_CUDA=1    also compile every cuda_library (nvcc), needed or not
set -uo pipefail

case ${1:-} in
  "") ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: takes no arguments (try --help)" >&2; exit 2 ;;
esac

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
read -r -a BAZEL_FLAGS <<<"${ZKFARM_BAZEL_FLAGS:-}"
FUZZ_SCRIPT=tests/fuzz/run_fuzz.sh

passed=0
failed=0
skipped=0
summary=()
SKIPPED=77  # a suite's exit status for "ran, but had nothing to test"
run_started=$SECONDS

# suite NAME CMD...: runs one suite, records PASS/FAIL/SKIP and its duration.
suite() {
  local name=$1
  shift
  local started=$SECONDS
  echo
  echo "==== $name: $*"
  "$@"
  local status=$?
  local took=$((SECONDS - started))
  local verdict
  if ((status == 0)); then
    passed=$((passed + 1))
    verdict=PASS
    summary+=("PASS $name (${took} s)")
  elif ((status == SKIPPED)); then
    skipped=$((skipped + 1))
    verdict="SKIP (nothing to test here)"
    summary+=("SKIP $name (nothing to test here, ${took} s)")
  else
    failed=$((failed + 1))
    verdict="FAIL (exit $status)"
    summary+=("FAIL $name (exit $status, ${took} s)")
  fi
  echo "==== $name: $verdict in ${took} s"
}

# The layer check, and the check that it answers the same without git metadata.
# shellcheck disable=SC2317  # run by suite NAME FUNC through "$@", a call shellcheck cannot see
layers() {
  local status=0
  tools/check_layers.sh --quiet || status=$?
  tools/check_layers_test.sh || status=$?
  return "$status"
}

# shellcheck disable=SC2317  # run by suite NAME FUNC through "$@", a call shellcheck cannot see
bazel_tests() {
  local filters=()
  # CUDA kernels (tag "cuda", see //tools:cuda.bzl) are compiled only when some
  # CPU-side target needs them: nothing here runs them, and one BLS12-381 G2 MSM
  # .cu alone takes nvcc ~8 CPU-minutes. The GPU runner (tests/gpu) builds them.
  [[ ${ZKFARM_BUILD_CUDA:-0} == 1 ]] || filters=('--build_tag_filters=-cuda,-gpu')
  bazel test "${BAZEL_FLAGS[@]}" "${filters[@]}" --keep_going //...
}

# Without a CUDA device (or in a CPU-only build) the probe runs but tests
# nothing: SKIP, not PASS.
# shellcheck disable=SC2317  # run by suite NAME FUNC through "$@", a call shellcheck cannot see
cuda_probe() {
  bazel build "${BAZEL_FLAGS[@]}" //kernels/cuda:device_probe || return
  local output status
  output=$(bazel-bin/kernels/cuda/device_probe)
  status=$?
  echo "$output"
  ((status == 0)) || return "$status"
  if grep -q '^no CUDA device' <<<"$output"; then return "$SKIPPED"; fi
}

# timeout(1) puts the fuzz run in its own process group, out of reach of a
# Ctrl-C or a kill of this script; the trap below forwards those to it.
fuzz_pid=""
# shellcheck disable=SC2317  # run by suite NAME FUNC through "$@", a call shellcheck cannot see
fuzz() {
  timeout "${ZKFARM_FUZZ_TIMEOUT:-900}" bash "$FUZZ_SCRIPT" &
  fuzz_pid=$!
  wait "$fuzz_pid"
  local status=$?
  fuzz_pid=""
  return "$status"
}
trap '[[ -n $fuzz_pid ]] && kill -TERM "$fuzz_pid" 2>/dev/null; exit 130' INT TERM

finish() {
  echo
  echo "==== summary (total $((SECONDS - run_started)) s)"
  printf '%s\n' "${summary[@]}"
  echo "$passed passed, $failed failed, $skipped skipped"
  ((failed == 0))
  exit
}

if [[ ${ZKFARM_SKIP_DEPS:-0} != 1 ]]; then
  echo "==== deps: tools/install_deps.sh"
  deps_started=$SECONDS
  if ! tools/install_deps.sh; then
    # Nothing below can be trusted without the dependencies: every suite fails.
    for name in shell bazel cuda-probe interop inputs fuzz deploy; do
      failed=$((failed + 1))
      summary+=("FAIL $name (not run: tools/install_deps.sh failed)")
    done
    finish
  fi
  summary+=("deps: $((SECONDS - deps_started)) s")
fi

suite layers layers
suite shell tools/check_shell.sh --quiet
suite bazel bazel_tests
suite cuda-probe cuda_probe
suite interop tests/interop/run_interop.sh
suite inputs tests/interop/run_inputs.sh
if [[ -f $FUZZ_SCRIPT ]]; then
  suite fuzz fuzz
else
  skipped=$((skipped + 1))
  summary+=("SKIP fuzz ($FUZZ_SCRIPT not present)")
fi
suite deploy tests/deploy/check_deploy.sh
# Three hosts in network namespaces, artifacts and witnesses over HTTP, a
# coordinator killed midway (SKIP where namespaces are not allowed).
suite multihost tests/multihost/multihost_test.sh
finish
