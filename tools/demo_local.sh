#!/bin/bash
# demo_local.sh -- builds the zkfarm CLI and runs Groth16 end to end on this
# machine without a farm, printing timings (tools/demo.sh --local runs it).
#
#   sudo tools/demo_local.sh [--curve bn254|bls12381|both] [--constraints N] [--out DIR]
#
# Per curve (default: both, 16384 constraints, files under out/demo/<curve>):
#   gen-circuit  synthetic R1CS + satisfying witness (zkfarm gen-circuit)
#   setup        Groth16 proving key (.zkey, snarkjs format; test-only randomness)
#   export-vk    verification key JSON (snarkjs format)
#   prove        proof.json + public.json
#   verify       zkfarm verify, then snarkjs groth16 verify when the interop
#                node_modules are installed (cross-check against snarkjs)
# Runs tools/install_deps.sh first (ZKFARM_SKIP_DEPS=1 skips it); ZKFARM_CLI=path
# uses a prebuilt zkfarm instead of building //cli:zkfarm. Exit status 0
# only when every step succeeded and every verifier accepted.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

curves=(bn254 bls12381)
constraints=16384
out_dir=$ROOT/out/demo
while (($#)); do
  case $1 in
    --curve)
      case ${2:-} in
        bn254 | bls12381) curves=("$2") ;;
        both) curves=(bn254 bls12381) ;;
        *) echo "demo_local.sh: --curve takes bn254, bls12381 or both" >&2; exit 2 ;;
      esac
      shift
      ;;
    --constraints)
      [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "demo_local.sh: --constraints takes a number" >&2; exit 2; }
      constraints=$2
      shift
      ;;
    --out)
      [[ -n ${2:-} ]] || { echo "demo_local.sh: --out takes a directory" >&2; exit 2; }
      out_dir=$2
      shift
      ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo_local.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

timings=()
# timed LABEL CMD...: runs CMD, records its wall time under LABEL.
timed() {
  local label=$1
  shift
  local started
  started=$(date +%s.%N)
  echo "---- $label: $*"
  "$@"
  local seconds
  seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  timings+=("$(printf '%-32s %8s s' "$label" "$seconds")")
}

if [[ ${ZKFARM_SKIP_DEPS:-0} != 1 ]]; then
  timed "install_deps" tools/install_deps.sh
fi
if [[ -n ${ZKFARM_CLI:-} ]]; then
  ZKFARM=$ZKFARM_CLI  # a prebuilt binary: no build
else
  timed "bazel build //cli:zkfarm" bazel build //cli:zkfarm
  ZKFARM=$ROOT/bazel-bin/cli/zkfarm
fi
[[ -x $ZKFARM ]] || { echo "demo_local.sh: $ZKFARM missing after the build" >&2; exit 1; }

SNARKJS_CLI=$ROOT/tests/interop/node_modules/snarkjs/build/cli.cjs
for curve in "${curves[@]}"; do
  dir=$out_dir/$curve
  mkdir -p "$dir"
  rm -f "$dir"/{circuit.r1cs,witness.wtns,circuit.zkey,vk.json,proof.json,public.json}
  timed "$curve gen-circuit ($constraints)" "$ZKFARM" gen-circuit --curve "$curve" \
    --constraints "$constraints" --r1cs "$dir/circuit.r1cs" --wtns "$dir/witness.wtns" --seed 1
  timed "$curve setup" "$ZKFARM" setup "$dir/circuit.r1cs" "$dir/circuit.zkey" --seed 1
  timed "$curve export-vk" "$ZKFARM" export-vk "$dir/circuit.zkey" "$dir/vk.json"
  timed "$curve prove" "$ZKFARM" prove "$dir/circuit.zkey" "$dir/witness.wtns" \
    "$dir/proof.json" "$dir/public.json"
  timed "$curve verify (zkfarm)" "$ZKFARM" verify "$dir/vk.json" "$dir/public.json" "$dir/proof.json"
  if [[ -f $SNARKJS_CLI ]]; then
    timed "$curve verify (snarkjs)" node "$SNARKJS_CLI" groth16 verify \
      "$dir/vk.json" "$dir/public.json" "$dir/proof.json"
  fi
done

echo
echo "==== demo timings (files in $out_dir)"
printf '%s\n' "${timings[@]}"
