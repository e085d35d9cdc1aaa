#!/usr/bin/env bash
# check_snarkjs_interop.sh -- runs snarkjs 0.7.6 on files written by our
# writers (formats/formats_interop re-encodes the fixtures) and fails unless
# snarkjs accepts them:
#   r1cs:  `snarkjs r1cs info`, and `snarkjs groth16 setup` from our .r1cs;
#   zkey:  `snarkjs zkey export verificationkey` (must equal the fixture's vk)
#          and `snarkjs groth16 prove` + `groth16 verify` with our .zkey/.wtns;
#   json:  our vk/proof/public re-encodings are byte-identical to snarkjs's.
# Usage: check_snarkjs_interop.sh [path-to-formats_interop]
# (default: builds it with g++ into a temp dir). Needs tests/vectors/node_modules.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
nm="$repo/tests/vectors/node_modules"
snarkjs=(node "$nm/snarkjs/build/cli.cjs")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

tool="${1:-}"
if [ -z "$tool" ]; then
  tool="$work/formats_interop"
  g++ -std=c++20 -O2 -I"$repo" "$repo/formats/formats_interop.cc" "$repo/formats/binfile.cc" \
    "$repo/formats/r1cs.cc" "$repo/formats/wtns.cc" "$repo/formats/zkey.cc" \
    "$repo/formats/snarkjs_json.cc" -lpthread -o "$tool"
fi

for curve in bn128 bls12381; do
  echo "== $curve"
  d="$work/$curve"
  mkdir -p "$d"
  f="$here/${curve}_"
  "$tool" r1cs "$curve" "${f}mul.r1cs" "$d/ours.r1cs"
  "$tool" wtns "$curve" "${f}mul.wtns" "$d/ours.wtns"
  "$tool" zkey "$curve" "${f}mul.zkey" "$d/ours.zkey"
  for kind in vk:verification_key proof:proof public:public; do
    "$tool" "${kind%%:*}" "$curve" "${f}${kind#*:}.json" "$d/${kind#*:}.json"
    cmp "${f}${kind#*:}.json" "$d/${kind#*:}.json"
  done
  (cd "$d" && "${snarkjs[@]}" r1cs info ours.r1cs)
  (cd "$d" && "${snarkjs[@]}" powersoftau new "$curve" 5 pot0.ptau >/dev/null &&
     "${snarkjs[@]}" powersoftau prepare phase2 pot0.ptau pot.ptau >/dev/null &&
     "${snarkjs[@]}" groth16 setup ours.r1cs pot.ptau fresh.zkey >/dev/null)
  (cd "$d" && "${snarkjs[@]}" zkey export verificationkey ours.zkey vk_from_ours.json >/dev/null)
  cmp "${f}verification_key.json" "$d/vk_from_ours.json"
  (cd "$d" && "${snarkjs[@]}" groth16 prove ours.zkey ours.wtns p.json pub.json &&
     "${snarkjs[@]}" groth16 verify vk_from_ours.json pub.json p.json)
  cmp "${f}public.json" "$d/pub.json"
done
echo "snarkjs accepted every file our writers produced"
