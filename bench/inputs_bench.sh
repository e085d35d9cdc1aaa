#!/bin/bash
# inputs_bench.sh -- input jobs against client-side witnesses, in one run.
#
#   bench/inputs_bench.sh [--links N] [--jobs J] [--workers W] [--keep]
#
# Circuit: bench/circuits/poseidon_chain.circom (a chain of N circomlib
# Poseidon(2) hashes, about 243 constraints each; default N = 512, about
# 2^17 constraints; N = 4250 is just under 2^20), compiled by circom2 to
# r1cs, wasm and C++; test-only key by `zkfarm setup`; the C++ generator built
# by `zkfarm circuit add --witness-generator` (times printed). Then, on a farm
# of W CPU workers (redis-server, zkfarm-coordinator, zkfarm-worker --cpu):
#   A  farm witnesses: J jobs of one input partition each, submitted at once
#      (`zkfarm submit --input`); the workers compute the witnesses;
#   B  client witnesses: one client computes each witness with snarkjs's wasm
#      calculator (`node <name>_js/generate_witness.js`) and submits it as a
#      file:// witness as soon as it is written, J times.
# For each: wall time from the first submission (A) or the first witness
# computation (B) to the last job done, verified proofs per second (every
# proof checked with `zkfarm verify`), and the mean witness time (A: the
# workers' zkfarm_witgen_duration_seconds; B: the client's wasm runs) against
# the mean prove time (zkfarm_prove_duration_seconds). Prints a Markdown
# table row per mode. Not a test: numbers go to BENCHMARKS.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=${ZKFARM_BIN:-$ROOT/bazel-bin}
ZKFARM=$BIN/cli/zkfarm
NODE_MODULES=$ROOT/tests/interop/node_modules
links=512 jobs=8 workers=1 keep=0
while (($#)); do
  case $1 in
    --links) links=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --workers) workers=$2; shift ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "inputs_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/zkfarm-inputs-bench.XXXXXX")
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ((keep)) || rm -rf "$WORK"
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
free_port() {
  local port=$1
  while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
  echo "$port"
}

C=$WORK/circuit
mkdir -p "$C"
cp -r "$NODE_MODULES/circomlib/circuits/." "$C/"
sed "s/LINKS/$links/" "$HERE/circuits/poseidon_chain.circom" >"$C/chain.circom"
t=$(now)
(cd "$C" && node "$NODE_MODULES/circom2/cli.js" chain.circom --r1cs --wasm --c -o . >compile.log 2>&1)
echo "circom2 (r1cs, wasm, C++): $(since "$t") s; $(grep -a 'non-linear constraints' "$C/compile.log" | sed 's/\x1b\[[0-9;]*m//g')"
t=$(now)
"$ZKFARM" setup "$C/chain.r1cs" "$C/chain.zkey" --seed 1 >/dev/null 2>&1
echo "zkfarm setup: $(since "$t") s"

mkdir -p "$WORK/farm/artifacts" "$WORK/witnesses"
redis_port=$(free_port 36379)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >"$WORK/farm/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
export ZKFARM_REDIS=redis://127.0.0.1:$redis_port ZKFARM_ARTIFACTS=$WORK/farm/artifacts
port=$(free_port 35555)
"$BIN/coordinator/zkfarm-coordinator" --id bench --redis "$ZKFARM_REDIS" --artifacts "$ZKFARM_ARTIFACTS" \
  --witness-root "$WORK" --listen "tcp://127.0.0.1:$port" --metrics-listen "" >"$WORK/farm/coordinator.log" 2>&1 &
pids+=($!)
metrics_ports=()
for ((n = 0; n < workers; n++)); do
  metrics_ports+=("$(free_port $((39470 + n)))")
  "$BIN/worker/zkfarm-worker" --cpu --id "bench-cpu$n" --coordinator "tcp://127.0.0.1:$port" \
    --artifacts "$ZKFARM_ARTIFACTS" --witness-root "$WORK" --metrics-listen "127.0.0.1:${metrics_ports[n]}" \
    >"$WORK/farm/worker$n.log" 2>&1 &
  pids+=($!)
done
sleep 2
t=$(now)
circuit=$("$ZKFARM" circuit add "$C/chain.zkey" --witness-generator "$C/chain_cpp")
echo "circuit add --witness-generator (PCE, vk, g++ of the generator): $(since "$t") s"
"$ZKFARM" export-vk "$C/chain.zkey" "$WORK/vk.json"

for ((j = 0; j < jobs; j++)); do
  node -e 'const n = Number(process.argv[1]), j = Number(process.argv[2]);
    console.log(JSON.stringify({seed: String(1000 + j), steps: Array.from({length: n}, (_, i) => String(i * 7 + j))}))' \
    "$links" "$j" >"$WORK/in$j.json"
done

# Sum and count of a histogram over the workers' /metrics.
histogram() { # NAME -> "sum count"
  local n total_sum=0 total_count=0 sum count
  for n in "${metrics_ports[@]}"; do
    sum=$( (exec 3<>"/dev/tcp/127.0.0.1/$n"; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3) |
      awk -v m="${1}_sum" '$1 ~ "^"m {s += $2} END {print s + 0}')
    count=$( (exec 3<>"/dev/tcp/127.0.0.1/$n"; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3) |
      awk -v m="${1}_count" '$1 ~ "^"m {s += $2} END {print s + 0}')
    total_sum=$(awk -v a="$total_sum" -v b="$sum" 'BEGIN { print a + b }')
    total_count=$(awk -v a="$total_count" -v b="$count" 'BEGIN { print a + b }')
  done
  echo "$total_sum $total_count"
}

verify_all() { # JOB... -> number verified
  local job ok=0
  for job in "$@"; do
    "$ZKFARM" result "$job" --out "$WORK/result-$job" >/dev/null &&
      "$ZKFARM" verify "$WORK/vk.json" "$WORK/result-$job/public.json" "$WORK/result-$job/proof.json" >/dev/null &&
      ok=$((ok + 1))
  done
  echo "$ok"
}

# A: the farm computes the witnesses.
read -r prove_sum0 prove_count0 < <(histogram zkfarm_prove_duration_seconds)
t=$(now)
farm_jobs=()
for ((j = 0; j < jobs; j++)); do farm_jobs+=("$("$ZKFARM" submit "$circuit" --input "$WORK/in$j.json")"); done
for job in "${farm_jobs[@]}"; do "$ZKFARM" wait "$job" --quiet --timeout 3600 >/dev/null; done
farm_seconds=$(since "$t")
farm_ok=$(verify_all "${farm_jobs[@]}")
read -r witgen_sum witgen_count < <(histogram zkfarm_witgen_duration_seconds)
read -r prove_sum1 prove_count1 < <(histogram zkfarm_prove_duration_seconds)

# B: one client computes each witness with snarkjs's wasm, then submits it.
t=$(now)
client_jobs=()
wasm_total=0
for ((j = 0; j < jobs; j++)); do
  w=$(now)
  node "$C/chain_js/generate_witness.js" "$C/chain_js/chain.wasm" "$WORK/in$j.json" "$WORK/witnesses/w$j.wtns"
  wasm_total=$(awk -v a="$wasm_total" -v b="$(since "$w")" 'BEGIN { print a + b }')
  client_jobs+=("$("$ZKFARM" submit "$circuit" "$WORK/witnesses/w$j.wtns")")
done
for job in "${client_jobs[@]}"; do "$ZKFARM" wait "$job" --quiet --timeout 3600 >/dev/null; done
client_seconds=$(since "$t")
client_ok=$(verify_all "${client_jobs[@]}")
read -r prove_sum2 prove_count2 < <(histogram zkfarm_prove_duration_seconds)

awk -v links="$links" -v jobs="$jobs" -v workers="$workers" \
  -v fs="$farm_seconds" -v fok="$farm_ok" -v ws="$witgen_sum" -v wc="$witgen_count" \
  -v p0="$prove_sum0" -v c0="$prove_count0" -v p1="$prove_sum1" -v c1="$prove_count1" -v p2="$prove_sum2" -v c2="$prove_count2" \
  -v cs="$client_seconds" -v cok="$client_ok" -v wasm="$wasm_total" 'BEGIN {
  print "| witnesses computed by | jobs | CPU workers | wall s | verified proofs/s | witness s (mean) | prove s (mean) |"
  print "|---|---|---|---|---|---|---|"
  printf "| the farm (C++ generator, pool) | %d | %d | %.1f | %.3f (%d verified) | %.2f | %.2f |\n", jobs, workers, fs, fok / fs, fok, (wc ? ws / wc : 0), ((c1 - c0) ? (p1 - p0) / (c1 - c0) : 0)
  printf "| the client (snarkjs wasm), then submit | %d | %d | %.1f | %.3f (%d verified) | %.2f | %.2f |\n", jobs, workers, cs, cok / cs, cok, wasm / jobs, ((c2 - c1) ? (p2 - p1) / (c2 - c1) : 0)
}'
