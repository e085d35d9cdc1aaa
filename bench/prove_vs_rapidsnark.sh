#!/bin/bash
# prove_vs_rapidsnark.sh -- CPU Groth16 prove time, zkfarm vs rapidsnark, on
# circom circuits (BN254), side by side in one run.
#
# Circuits (compiled here with circom2 from tests/interop/node_modules, witness
# by snarkjs's wasm calculator, key by `zkfarm setup --seed 7`):
#   multiplier_poseidon  the interop suite's circuit (~530 constraints)
#   sha256               bench/circuits/sha256_bench.circom, SHA-256 of 512
#                        private bits (~62k constraints, domain 2^16)
#   poseidon             bench/circuits/poseidon_chain.circom, 256 links
#                        (~132k constraints, domain 2^18)
#   pub328               bench/circuits/public_inputs.circom: 328 public
#                        inputs (a PoRep partition's count) through a Poseidon
#                        chain (~170k constraints, domain 2^18)
#   pub328_small         the same with 16 links: 328 public inputs, ~4.4k
#                        constraints (start-up and public-input handling)
# For each circuit the two provers run alternately, RUNS times each, on the
# same .zkey/.wtns (zkfarm with --cpu); the table gives the median wall time
# and the median CPU time (user + system) per tool and their ratios. Every
# proof of the last round is checked with `snarkjs groth16 verify`, and the
# public signals of all tools must be identical. On a shared machine, read
# the CPU columns beside the wall ones: other load stretches wall time.
#
# usage: bench/prove_vs_rapidsnark.sh [circuit...]   (default: all above)
# env:   RAPIDSNARK  rapidsnark's `prover` binary (optional: without it only
#                    zkfarm is timed). rapidsnark is not part of zkfarm and
#                    nothing else uses it; build it from its public source
#                    anywhere outside this repository.
#        ZKFARM      zkfarm binary (default: <repo>/bazel-bin/cli/zkfarm)
#        ZKFARM_PROVE  time this prover instead of `$ZKFARM prove`: the
#                    lean bazel-bin/cli/zkfarm-prove (rapidsnark's argument
#                    order, without the farm commands' libraries)
#        BASELINE    another zkfarm binary (e.g. a copy built before a
#                    change), timed alternately with the others (optional)
#        RUNS        runs per tool and circuit (default 5)
#        WORK        work dir; compiled circuits and keys are kept there and
#                    reused by the next run with the same WORK (default: a
#                    new temp dir)
#        LOCK        a file to flock(1) around the timed runs, so benchmarks
#                    of several users of one machine do not overlap
#                    (default: none)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ZKFARM="${ZKFARM:-$ROOT/bazel-bin/cli/zkfarm}"
ZKFARM_PROVE="${ZKFARM_PROVE:-}"
prove_cmd=("$ZKFARM" prove)
label=zkfarm
[ -z "$ZKFARM_PROVE" ] || prove_cmd=("$ZKFARM_PROVE") label=zkfarm-prove
NODE_MODULES="$ROOT/tests/interop/node_modules"
RAPIDSNARK="${RAPIDSNARK:-}"
BASELINE="${BASELINE:-}"
RUNS="${RUNS:-5}"
WORK="${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/zkfarm-vs-rapidsnark.XXXXXX")}"
LOCK="${LOCK:-}"
ALL=(multiplier_poseidon sha256 poseidon pub328 pub328_small)
CIRCUITS=("$@")
[ $# -eq 0 ] && CIRCUITS=("${ALL[@]}")

[ -x "$ZKFARM" ] || { echo "prove_vs_rapidsnark.sh: $ZKFARM missing; bazel build //cli:zkfarm first" >&2; exit 2; }
for package in snarkjs circom2 circomlib; do
  [ -d "$NODE_MODULES/$package" ] || { echo "prove_vs_rapidsnark.sh: $NODE_MODULES/$package missing; run tools/install_deps.sh" >&2; exit 2; }
done
if [ -n "$RAPIDSNARK" ] && [ ! -x "$RAPIDSNARK" ]; then
  echo "prove_vs_rapidsnark.sh: RAPIDSNARK=$RAPIDSNARK is not an executable" >&2
  exit 2
fi
if [ -n "$BASELINE" ] && [ ! -x "$BASELINE" ]; then
  echo "prove_vs_rapidsnark.sh: BASELINE=$BASELINE is not an executable" >&2
  exit 2
fi
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "prove_vs_rapidsnark.sh: RUNS must be a positive integer" >&2; exit 2; }
SNARKJS=(node "$NODE_MODULES/snarkjs/build/cli.cjs")
mkdir -p "$WORK"

# prepare NAME: WORK/NAME/{c.zkey,w.wtns,vk.json}, reused when present.
prepare() {
  local name=$1 d="$WORK/$1" param links
  [ -s "$d/c.zkey" ] && [ -s "$d/w.wtns" ] && [ -s "$d/vk.json" ] && return 0
  rm -rf "$d" && mkdir -p "$d"
  cp -r "$NODE_MODULES/circomlib/circuits/." "$d/"
  case $name in
    multiplier_poseidon)
      cp "$ROOT/tests/interop/circuits/multiplier_poseidon.circom" "$d/bench_main.circom"
      cp "$ROOT/tests/interop/circuits/multiplier_poseidon.input.json" "$d/input.json" ;;
    sha256)
      sed 's/BITS/512/' "$ROOT/bench/circuits/sha256_bench.circom" >"$d/bench_main.circom"
      node -e 'console.log(JSON.stringify({in: Array.from({length: 512}, (_, i) => String((i * 7 + 3) % 5 % 2))}))' >"$d/input.json" ;;
    poseidon)
      sed 's/LINKS/256/' "$ROOT/bench/circuits/poseidon_chain.circom" >"$d/bench_main.circom"
      node -e 'console.log(JSON.stringify({seed: "1", steps: Array.from({length: 256}, (_, i) => String(i * 7 + 1))}))' >"$d/input.json" ;;
    pub328 | pub328_small)
      param=328; [ "$name" = pub328 ] && links=328 || links=16
      sed "s/(N, LINKS)/($param, $links)/" "$ROOT/bench/circuits/public_inputs.circom" >"$d/bench_main.circom"
      node -e 'const n = 328; console.log(JSON.stringify({pub: Array.from({length: n}, (_, i) => String(i * 3 + 5)),
        priv: Array.from({length: n}, (_, i) => String(i * 11 + 2))}))' >"$d/input.json" ;;
    *) echo "prove_vs_rapidsnark.sh: unknown circuit $name (known: ${ALL[*]})" >&2; exit 2 ;;
  esac
  (cd "$d" && node "$NODE_MODULES/circom2/cli.js" bench_main.circom --r1cs --wasm -o . >compile.log 2>&1) ||
    { echo "prove_vs_rapidsnark.sh: circom2 failed on $name (see $d/compile.log)" >&2; exit 1; }
  node "$d/bench_main_js/generate_witness.js" "$d/bench_main_js/bench_main.wasm" "$d/input.json" "$d/w.wtns"
  "$ZKFARM" setup "$d/bench_main.r1cs" "$d/c.zkey" --seed 7 >"$d/setup.log" 2>&1 ||
    { echo "prove_vs_rapidsnark.sh: zkfarm setup failed on $name (see $d/setup.log)" >&2; exit 1; }
  "$ZKFARM" export-vk "$d/c.zkey" "$d/vk.json"
}

# timed OUT CMD...: runs CMD, appends "wall cpu" (seconds) to OUT; fails if CMD fails.
# Wall time from bash's microsecond clock around the run; CPU time (user +
# system of the process and its threads) from bash's `time`, in milliseconds
# (getrusage). time(1)'s %e, %U and %S have 10 ms steps, as large as the
# smallest circuit's whole proof: its CPU column read 0.02 / 0.02 = 1.00x
# where perf stat measured 23.6 / 28.2 ms.
timed() {
  local out=$1 start end status TIMEFORMAT='%3U %3S'; shift
  start=$EPOCHREALTIME
  { time "$@" >"$out.log" 2>&1; } 2>"$out.t" && status=0 || status=$?
  end=$EPOCHREALTIME
  [ "$status" -eq 0 ] || { echo "prove_vs_rapidsnark.sh: failed: $* (see $out.log)" >&2; exit 1; }
  awk -v start="$start" -v end="$end" '{ printf "%.3f %.3f\n", end - start, $1 + $2 }' "$out.t" >>"$out"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for name in "${CIRCUITS[@]}"; do prepare "$name"; done
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

header="| circuit | constraints | public"
rule="|---|---|---"
if [ -n "$BASELINE" ]; then
  header+=" | baseline wall (s) | baseline CPU (s)"
  rule+="|---|---"
fi
header+=" | $label wall (s) | $label CPU (s)"
rule+="|---|---"
if [ -n "$RAPIDSNARK" ]; then
  header+=" | rapidsnark wall (s) | rapidsnark CPU (s) | wall ratio | CPU ratio"
  rule+="|---|---|---|---"
fi
echo "$header | verified |"
echo "$rule|---|"
for name in "${CIRCUITS[@]}"; do
  d="$WORK/$name"
  rm -f "$d/zk.times" "$d/rs.times" "$d/base.times"
  run_all() {
    for ((i = 0; i < RUNS; i++)); do
      [ -z "$BASELINE" ] ||
        timed "$d/base.times" "$BASELINE" prove "$d/c.zkey" "$d/w.wtns" "$d/base_proof.json" "$d/base_public.json" --cpu
      timed "$d/zk.times" "${prove_cmd[@]}" "$d/c.zkey" "$d/w.wtns" "$d/zk_proof.json" "$d/zk_public.json" --cpu
      [ -z "$RAPIDSNARK" ] ||
        timed "$d/rs.times" "$RAPIDSNARK" "$d/c.zkey" "$d/w.wtns" "$d/rs_proof.json" "$d/rs_public.json"
    done
  }
  if [ -n "$LOCK" ]; then
    exec {lock_fd}>"$LOCK"
    flock "$lock_fd"
    run_all
    exec {lock_fd}>&-
  else
    run_all
  fi
  ok=yes
  if [ -n "$BASELINE" ]; then
    "${SNARKJS[@]}" groth16 verify "$d/vk.json" "$d/base_public.json" "$d/base_proof.json" >"$d/verify_base.log" 2>&1 || ok=no
    cmp -s "$d/zk_public.json" "$d/base_public.json" || ok="no (public signals differ)"
  fi
  "${SNARKJS[@]}" groth16 verify "$d/vk.json" "$d/zk_public.json" "$d/zk_proof.json" >"$d/verify_zk.log" 2>&1 || ok=no
  if [ -n "$RAPIDSNARK" ]; then
    "${SNARKJS[@]}" groth16 verify "$d/vk.json" "$d/rs_public.json" "$d/rs_proof.json" >"$d/verify_rs.log" 2>&1 || ok=no
    node -e 'const [a, b] = process.argv.slice(1).map(f => JSON.stringify(JSON.parse(require("fs").readFileSync(f))));
      process.exit(a === b ? 0 : 1)' "$d/zk_public.json" "$d/rs_public.json" || ok="no (public signals differ)"
  fi
  info=$(grep -a -o 'BN254, [0-9]* signals, [0-9]* public, domain [0-9]*' "$d/setup.log" || true)
  public=$(echo "$info" | awk '{ print $4 }')
  constraints=$(node -e 'const b = require("fs").readFileSync(process.argv[1]);
    // .r1cs header section: field size n8 at +0, prime, then nWires, nPubOut, nPubIn, nPrvIn, nLabels(u64), nConstraints
    let off = 12; for (;;) { const type = b.readUInt32LE(off), size = Number(b.readBigUInt64LE(off + 4));
      if (type === 1) { const n8 = b.readUInt32LE(off + 12); console.log(b.readUInt32LE(off + 16 + n8 + 24)); break; }
      off += 12 + size; }' "$d/bench_main.r1cs")
  zk_wall=$(awk '{ print $1 }' "$d/zk.times" | median)
  zk_cpu=$(awk '{ print $2 }' "$d/zk.times" | median)
  row="| $name | $constraints | $public"
  if [ -n "$BASELINE" ]; then
    row+=" | $(awk '{ print $1 }' "$d/base.times" | median) | $(awk '{ print $2 }' "$d/base.times" | median)"
  fi
  row+=" | $zk_wall | $zk_cpu"
  if [ -n "$RAPIDSNARK" ]; then
    rs_wall=$(awk '{ print $1 }' "$d/rs.times" | median)
    rs_cpu=$(awk '{ print $2 }' "$d/rs.times" | median)
    row+=" | $rs_wall | $rs_cpu | $(awk -v a="$zk_wall" -v b="$rs_wall" 'BEGIN { printf "%.2fx", a / b }')"
    row+=" | $(awk -v a="$zk_cpu" -v b="$rs_cpu" 'BEGIN { printf "%.2fx", a / b }')"
  fi
  echo "$row | $ok |"
done
echo "(medians of $RUNS alternating runs per tool; ratio = $label / rapidsnark, below 1 is faster; load average" \
  "$load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; work dir $WORK)"
