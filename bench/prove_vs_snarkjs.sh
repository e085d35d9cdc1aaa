#!/bin/bash
# prove_vs_snarkjs.sh -- full Groth16 prove time, zkfarm vs snarkjs, same files.
#
# For each curve and size: `zkfarm gen-circuit` (PoRep-profile synthetic
# circuit), `zkfarm setup` (test-only key), then times `zkfarm prove` and
# `snarkjs groth16 prove` on the same .zkey/.wtns (wall clock, best of
# $REPEATS runs), and checks each proof with the other tool's verifier.
# Prints a Markdown table row per (curve, size).
#
# usage: bench/prove_vs_snarkjs.sh [log2 sizes...]   (default: 16 18 20)
# env:   REPEATS (default 3), CURVES (default "bn254 bls12381"), WORK (temp dir)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ZKFARM="${ZKFARM:-$ROOT/bazel-bin/cli/zkfarm}"
SNARKJS="$ROOT/tests/interop/node_modules/.bin/snarkjs"
SIZES=("${@:-16 18 20}")
[ $# -eq 0 ] && SIZES=(16 18 20)
REPEATS="${REPEATS:-3}"
CURVES="${CURVES:-bn254 bls12381}"
WORK="${WORK:-$(mktemp -d)}"
[ -x "$ZKFARM" ] || { echo "build //cli:zkfarm first" >&2; exit 2; }
[ -x "$SNARKJS" ] || { echo "run tools/install_deps.sh first (snarkjs)" >&2; exit 2; }

best_of() {  # best_of N cmd... -> prints the best wall time in seconds
  local n=$1; shift
  local best=""
  for ((i = 0; i < n; i++)); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    best=$(echo "$t0 $t1 ${best:-1e9}" | awk '{d=$2-$1; print (d<$3)?d:$3}')
  done
  echo "$best"
}

echo "| curve | constraints | zkfarm prove (s) | snarkjs prove (s) | speed-up | cross-verified |"
echo "|---|---|---|---|---|---|"
for curve in $CURVES; do
  for k in "${SIZES[@]}"; do
    n=$((1 << k))
    d="$WORK/$curve-$k"
    mkdir -p "$d"
    "$ZKFARM" gen-circuit --curve "$curve" --constraints "$n" --r1cs "$d/c.r1cs" --wtns "$d/w.wtns" 2>/dev/null
    "$ZKFARM" setup "$d/c.r1cs" "$d/c.zkey" --seed 7 2>/dev/null
    "$ZKFARM" export-vk "$d/c.zkey" "$d/vk.json"
    ours=$(best_of "$REPEATS" "$ZKFARM" prove "$d/c.zkey" "$d/w.wtns" "$d/p.json" "$d/pub.json")
    theirs=$(best_of "$REPEATS" "$SNARKJS" groth16 prove "$d/c.zkey" "$d/w.wtns" "$d/sp.json" "$d/spub.json")
    ok="no"
    if "$SNARKJS" groth16 verify "$d/vk.json" "$d/pub.json" "$d/p.json" >/dev/null 2>&1 &&
       "$ZKFARM" verify "$d/vk.json" "$d/spub.json" "$d/sp.json" >/dev/null 2>&1; then ok="yes"; fi
    ratio=$(echo "$ours $theirs" | awk '{printf "%.1fx", $2/$1}')
    printf "| %s | 2^%d | %.3f | %.3f | %s | %s |\n" "$curve" "$k" "$ours" "$theirs" "$ratio" "$ok"
  done
done
