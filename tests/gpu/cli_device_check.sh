#!/usr/bin/env bash
# cli_device_check.sh [WORKDIR] [CONSTRAINTS] -- `zkfarm prove` on the GPU
# (the bundle's zkfarm_local: the same local commands)
# against `zkfarm prove --cpu`, from a bundle made by build_bundle.sh (this
# script sits in the bundle's root): for each curve, a synthetic circuit is
# generated and set up (--seed, so reproducible), proved with --device 0 and
# with --cpu under the same --seed, and the two proof.json files must be
# byte-identical; the default backend must say it picked the GPU, and a
# device that does not exist must fail at start with exit 2. The key comes
# from `zkfarm setup --device 0`; if that fails the curve fails (no CPU
# setup stands in for it).
# Prints the --timings JSON of each run (CURVES="bn254" limits the curves).
# Exit status: 0 when every check held.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d)}
constraints=${2:-200000}
mkdir -p "$work"
zk() { "$here/run" zkfarm_local "$@"; }
failed=0
check() {  # check DESCRIPTION STATUS
  if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1"; failed=1; fi
}
for curve in ${CURVES:-bn254 bls12381}; do
  d="$work/$curve"
  mkdir -p "$d"
  zk gen-circuit --curve "$curve" --constraints "$constraints" --r1cs "$d/c.r1cs" --wtns "$d/c.wtns" 2>"$d/gen.log"
  check "$curve gen-circuit" $?
  start=$SECONDS
  # The GPU setup is under test too: a failure is a failed check, never
  # replaced by the CPU setup.
  zk setup "$d/c.r1cs" "$d/c.zkey" --seed 5 --device 0 2>"$d/setup.log"
  status=$?
  [ $status -eq 0 ] || tail -3 "$d/setup.log"
  check "$curve setup --device 0 ($((SECONDS - start)) s)" $status
  [ $status -eq 0 ] || continue
  for backend in gpu cpu; do
    flag=--device=0
    [ $backend = cpu ] && flag=--cpu
    start=$SECONDS
    zk prove "$d/c.zkey" "$d/c.wtns" "$d/proof_$backend.json" "$d/public_$backend.json" --seed 7 --r1cs "$d/c.r1cs" \
      $flag --timings 2>"$d/prove_$backend.log"
    check "$curve prove $flag ($((SECONDS - start)) s wall)" $?
    grep -E '^zkfarm prove: proving|^\{' "$d/prove_$backend.log"
  done
  cmp -s "$d/proof_gpu.json" "$d/proof_cpu.json"
  check "$curve proof.json identical (GPU vs CPU)" $?
  cmp -s "$d/public_gpu.json" "$d/public_cpu.json"
  check "$curve public.json identical" $?
  zk prove "$d/c.zkey" "$d/c.wtns" "$d/proof_default.json" "$d/public_default.json" --seed 7 2>"$d/prove_default.log"
  check "$curve prove (default backend)" $?
  grep -q 'proving on the GPU' "$d/prove_default.log"
  check "$curve default backend is the GPU" $?
  cmp -s "$d/proof_default.json" "$d/proof_cpu.json"
  check "$curve default proof identical" $?
done
zk prove "$work/bn254/c.zkey" "$work/bn254/c.wtns" "$work/x.json" "$work/y.json" --device 57 2>"$work/bad_device.log"
status=$?
cat "$work/bad_device.log"
[ $status -eq 2 ] && grep -q 'does not exist' "$work/bad_device.log" && [ ! -e "$work/x.json" ]
check "--device 57 fails at start with exit 2 (got $status)" $?
zk prove "$work/bn254/c.zkey" "$work/bn254/c.wtns" "$work/x.json" "$work/y.json" --device 0 --cpu 2>/dev/null
[ $? -eq 2 ]
check "--device with --cpu is a usage error" $?
echo "cli_device_check: $([ $failed -eq 0 ] && echo all checks passed || echo FAILED)"
exit $failed
