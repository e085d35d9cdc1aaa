#!/usr/bin/env bash
# make_fixtures.sh -- regenerates the snarkjs-made fixtures in this folder.
#
# Needs tests/vectors/node_modules (npm install there: snarkjs 0.7.6 and
# circom2 0.2.23). For each curve (bn128, bls12381) it compiles mul.circom,
# computes a witness, runs a tiny powers-of-tau ceremony, a Groth16 setup
# plus one contribution, exports the verification key, proves and verifies.
# The outputs are random (fresh toxic waste), so regenerating changes them;
# tests only rely on their internal consistency.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
nm="$repo/tests/vectors/node_modules"
snarkjs=(node "$nm/snarkjs/build/cli.cjs")
circom=(node "$nm/circom2/cli.js")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for curve in bn128 bls12381; do
  d="$work/$curve"
  mkdir -p "$d"
  cp "$here/mul.circom" "$d/"
  if [ "$curve" = bn128 ]; then
    # k = r - 1 exercises the largest field element.
    echo '{"a": "3", "b": "11", "k": "21888242871839275222246405745257275088548364400416034343698204186575808495616"}' > "$d/input.json"
  else
    echo '{"a": "3", "b": "11", "k": "52435875175126190479447740508185965837690552500527637822603658699938581184512"}' > "$d/input.json"
  fi
  (cd "$d" && "${circom[@]}" mul.circom --r1cs --wasm -p "$curve" -o . >/dev/null)
  (cd "$d" && "${snarkjs[@]}" wtns calculate mul_js/mul.wasm input.json mul.wtns)
  (cd "$d" && "${snarkjs[@]}" powersoftau new "$curve" 5 pot0.ptau >/dev/null)
  (cd "$d" && "${snarkjs[@]}" powersoftau contribute pot0.ptau pot1.ptau --name=fixture -e=fixture-entropy >/dev/null)
  (cd "$d" && "${snarkjs[@]}" powersoftau prepare phase2 pot1.ptau pot.ptau >/dev/null)
  (cd "$d" && "${snarkjs[@]}" groth16 setup mul.r1cs pot.ptau mul_0000.zkey >/dev/null)
  (cd "$d" && "${snarkjs[@]}" zkey contribute mul_0000.zkey mul.zkey --name=fixture -e=more-entropy >/dev/null)
  (cd "$d" && "${snarkjs[@]}" zkey export verificationkey mul.zkey verification_key.json >/dev/null)
  (cd "$d" && "${snarkjs[@]}" groth16 prove mul.zkey mul.wtns proof.json public.json)
  (cd "$d" && "${snarkjs[@]}" groth16 verify verification_key.json public.json proof.json)
  for f in mul.r1cs mul.wtns mul_0000.zkey mul.zkey verification_key.json proof.json public.json; do
    cp "$d/$f" "$here/${curve}_$f"
  done
done
ls -l "$here"
