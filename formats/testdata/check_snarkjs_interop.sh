#!/usr/bin/env bash
# check_snarkjs_interop.sh -- runs snarkjs 0.7.6 on files written by our
# writers (formats/formats_interop re-encodes the fixtures) and fails unless
# snarkjs accepts them:
#   r1cs:  `snarkjs r1cs info`, and `snarkjs groth16 setup` from our .r1cs;
#   zkey:  `snarkjs zkey export verificationkey` (must equal the fixture's vk)
#          and `snarkjs groth16 prove` + `groth16 verify` with our .zkey/.wtns;
#   json:  our vk/proof/public re-encodings are byte-identical to snarkjs's.
# Usage: check_snarkjs_interop.sh [path-to-formats_interop]
# (default: bazel build //formats:formats_interop). Needs the interop suite's
# node packages: tests/interop/node_modules, installed by tools/install_deps.sh
# (ZKFARM_NODE_MODULES names another copy).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
nm="${ZKFARM_NODE_MODULES:-$repo/tests/interop/node_modules}"
[ -f "$nm/snarkjs/build/cli.cjs" ] || { echo "no snarkjs in $nm: run tools/install_deps.sh" >&2; exit 2; }
snarkjs=(node "$nm/snarkjs/build/cli.cjs")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

tool="${1:-}"
if [ -z "$tool" ]; then
  # Built by Bazel, so the tool links whatever its sources become.
  (cd "$repo" && bazel build //formats:formats_interop)
  tool="$repo/bazel-bin/formats/formats_interop"
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
