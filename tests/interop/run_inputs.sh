#!/bin/bash
# run_inputs.sh -- input jobs end to end: circom2 compiles a circuit to C++ and
# wasm, the farm computes the witnesses, snarkjs checks the proofs.
#
# For each curve (bn128, bls12381), in a temp dir: compile
# circuits/input_check.circom with circom2 (--c --wasm --r1cs; circomlib
# copied next to it), make a test-only key with `zkfarm setup`, export its
# verification key with snarkjs, start a farm (redis-server,
# zkfarm-coordinator, two CPU zkfarm-workers), then:
#   generator-checks  circuit add --witness-generator refuses a directory that
#                     is not circom's output and a generator of the other prime,
#                     then accepts the right one
#   public-input-map  the circuit record says where its public input is in an
#                     input.json (so the coordinator, not a worker, supplies it)
#   identical         the generator built into the artifact store writes the
#                     same bytes as circom's wasm calculator for the same input
#   mixed-job         one job: two input partitions and one witness partition
#                     (the wasm witness, inline); every proof passes snarkjs
#                     groth16 verify; each input partition's public signals are
#                     those of the wasm witness
#   bad-*             unknown signal, wrong array size, a failing `===`,
#                     non-numeric and out-of-field values, 2 MiB of JSON, no
#                     value for the public input: each
#                     fails with a message naming the problem (at submit when the
#                     CLI can tell, else the job fails badInput, confirmed by the
#                     second worker)
#   still-serving     a good input job submitted after them is proved
#   status-waiting-for-witness  meanwhile `zkfarm status` shows the partition
#                     in "waiting_for_witness"
#   killed-generating a worker SIGKILLed while it generates a witness (held
#                     there by the test-only --witgen-delay-ms) loses nothing:
#                     the partition goes back once, without counting an
#                     attempt, and another worker proves it
#   generator-not-replaced  another build of the generator under the same
#                     circuit is refused (record and store unchanged);
#                     --replace-witness-generator by the registrant replaces it
# Each check prints "PASS <curve> <check> (N s)" or "FAIL <curve> <check>: <why>
# (N s)", N the seconds since the previous verdict; the last line is
# "inputs: N passed, M failed"; exit 0 only when nothing failed.
#
# Usage: tests/interop/run_inputs.sh [--keep] [--curve bn128|bls12381]
# Environment: ZKFARM_BIN (default <repo>/bazel-bin: cli/zkfarm,
# coordinator/zkfarm-coordinator, worker/zkfarm-worker).
# Needs node, tests/interop/node_modules (tools/install_deps.sh), g++, nasm,
# libgmp-dev, redis-server.
set -uo pipefail

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${ZKFARM_BIN:-$ROOT/bazel-bin}
[[ $BIN == /* ]] || BIN=$PWD/$BIN
ZKFARM=$BIN/cli/zkfarm
NODE_MODULES=$HERE/node_modules
SNARKJS=(node "$NODE_MODULES/snarkjs/build/cli.cjs")
CIRCOM=(node "$NODE_MODULES/circom2/cli.js")
NAME=input_check

keep=0
curves=(bn128 bls12381)
while (($#)); do
  case $1 in
    --keep) keep=1 ;;
    --curve)
      [[ ${2:-} == bn128 || ${2:-} == bls12381 ]] || { echo "run_inputs.sh: --curve takes bn128 or bls12381" >&2; exit 2; }
      curves=("$2")
      shift
      ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_inputs.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

for tool in node redis-server redis-cli g++ nasm; do
  command -v "$tool" >/dev/null || { echo "run_inputs.sh: $tool not found; run tools/install_deps.sh" >&2; exit 2; }
done
for package in snarkjs circom2 circomlib; do
  [[ -d $NODE_MODULES/$package ]] || { echo "run_inputs.sh: $NODE_MODULES/$package missing; run tools/install_deps.sh" >&2; exit 2; }
done
for binary in "$ZKFARM" "$BIN/coordinator/zkfarm-coordinator" "$BIN/worker/zkfarm-worker"; do
  [[ -x $binary ]] || { echo "run_inputs.sh: $binary not built (bazel build //cli:zkfarm //coordinator:zkfarm-coordinator //worker:zkfarm-worker)" >&2; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/zkfarm-inputs.XXXXXX")
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  ((keep)) || rm -rf "$WORK"
}
trap cleanup EXIT
((keep)) && echo "work dir: $WORK (kept)"

passed=0
failed=0
# Each verdict line ends with the seconds since the previous one (where the
# suite's time goes).
last_verdict=$SECONDS
pass() {
  echo "PASS $1 ($((SECONDS - last_verdict)) s)"
  last_verdict=$SECONDS
  passed=$((passed + 1))
}
fail() {
  echo "FAIL $1: $2 ($((SECONDS - last_verdict)) s)"
  last_verdict=$SECONDS
  failed=$((failed + 1))
}
log_tail() { tail -n 6 "$1" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' | tr '\n' ' ' | cut -c1-600; }

free_port() {
  local port=$1
  while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
  echo "$port"
}

# wait_for_log FILE PATTERN SECONDS
wait_for_log() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# Both curves' sources compiled once per curve, the other curve's C++ kept
# for the wrong-prime check.
compile() {
  local curve=$1 dir=$WORK/$1/circuit
  mkdir -p "$dir"
  cp -r "$NODE_MODULES/circomlib/circuits/." "$dir/"
  cp "$HERE/circuits/$NAME.circom" "$dir/"
  (cd "$dir" && "${CIRCOM[@]}" "$NAME.circom" --r1cs --wasm --c --prime "$curve" -o . >compile.log 2>&1)
}

# start_farm DIR: redis, coordinator, two CPU workers; sets REDIS_PORT, exports ZKFARM_*.
start_farm() {
  local dir=$1 n
  mkdir -p "$dir/artifacts" "$dir/redis"
  REDIS_PORT=$(free_port 26379)
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$dir/redis" --save "" --appendonly no \
    >"$dir/redis.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  export ZKFARM_REDIS=redis://127.0.0.1:$REDIS_PORT
  export ZKFARM_ARTIFACTS=$dir/artifacts
  local port
  port=$(free_port 25555)
  "$BIN/coordinator/zkfarm-coordinator" --id inputs --redis "$ZKFARM_REDIS" --artifacts "$ZKFARM_ARTIFACTS" \
    --listen "tcp://127.0.0.1:$port" --metrics-listen "" >"$dir/coordinator.log" 2>&1 &
  pids+=($!)
  wait_for_log "$dir/coordinator.log" "listening on" 30 || return 1
  COORDINATOR_ENDPOINT=tcp://127.0.0.1:$port
  for n in 0 1; do
    "$BIN/worker/zkfarm-worker" --cpu --id "inputs-cpu$n" --coordinator "tcp://127.0.0.1:$port" \
      --redis "$ZKFARM_REDIS" --artifacts "$ZKFARM_ARTIFACTS" --witgen-workers 1 --witgen-timeout-s 60 \
      --metrics-listen "" >"$dir/worker$n.log" 2>&1 &
    pids+=($!)
  done
  for n in 0 1; do wait_for_log "$dir/worker$n.log" "welcomed" 30 || return 1; done
}

stop_farm() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  pids=()
}

# The public signals (witness[1..nPublic]) of a .wtns, as a JSON array.
public_of() { # WTNS NPUBLIC
  "${SNARKJS[@]}" wtns export json "$1" "$1.json" >/dev/null 2>&1 &&
    node -e 'const w = require(process.argv[1]); console.log(JSON.stringify(w.slice(1, 1 + Number(process.argv[2]))))' "$1.json" "$2"
}

# expect_job_failure NAME JOB PATTERN...: PASS when the job fails badInput and
# its error contains every pattern.
expect_job_failure() {
  local name=$1 job=$2
  shift 2
  "$ZKFARM" wait "$job" --timeout 180 --quiet >"$CASE/$name.status" 2>&1
  local status
  status=$(cat "$CASE/$name.status")
  if ! grep -q '"error_code":"badInput"' <<<"$status"; then
    fail "$CURVE $name" "wanted error_code badInput: $status"
    return
  fi
  local pattern
  for pattern in "$@"; do
    if ! grep -qF -- "$pattern" <<<"$status"; then
      fail "$CURVE $name" "the error does not say '$pattern': $status"
      return
    fi
  done
  pass "$CURVE $name"
}

# expect_submit_refused NAME PATTERN ARGS...: PASS when `zkfarm submit ARGS`
# exits 2 saying PATTERN.
expect_submit_refused() {
  local name=$1 pattern=$2
  shift 2
  "$ZKFARM" submit "$@" >"$CASE/$name.log" 2>&1
  local got=$?
  if ((got == 2)) && grep -qF -- "$pattern" "$CASE/$name.log"; then
    pass "$CURVE $name"
  else
    fail "$CURVE $name" "exit $got, wanted 2 saying '$pattern': $(log_tail "$CASE/$name.log")"
  fi
}

for CURVE in "${curves[@]}"; do
  if ! compile "$CURVE"; then
    fail "$CURVE compile" "$(log_tail "$WORK/$CURVE/circuit/compile.log")"
    continue
  fi
done

for CURVE in "${curves[@]}"; do
  CASE=$WORK/$CURVE
  C=$CASE/circuit
  [[ -f $C/$NAME.r1cs ]] || continue
  other=bls12381
  [[ $CURVE == bls12381 ]] && other=bn128
  if ! "$ZKFARM" setup "$C/$NAME.r1cs" "$CASE/circuit.zkey" --seed 7 >"$CASE/setup.log" 2>&1 ||
    ! "${SNARKJS[@]}" zkey export verificationkey "$CASE/circuit.zkey" "$CASE/vk.json" >"$CASE/vk.log" 2>&1; then
    fail "$CURVE key" "$(log_tail "$CASE/setup.log") $(log_tail "$CASE/vk.log")"
    continue
  fi
  # Inputs: a * b0 * b1 * b2 = expected.
  for i in 0 1 2; do
    a=$((3 + i)) b0=$((5 + i)) b1=7 b2=$((11 + 2 * i))
    echo "{\"a\": \"$a\", \"b\": [\"$b0\", \"$b1\", \"$b2\"], \"expected\": \"$((a * b0 * b1 * b2))\"}" >"$CASE/in$i.json"
    node "$C/${NAME}_js/generate_witness.js" "$C/${NAME}_js/$NAME.wasm" "$CASE/in$i.json" "$CASE/wasm$i.wtns" \
      >"$CASE/wasm$i.log" 2>&1 || fail "$CURVE wasm-witness-$i" "$(log_tail "$CASE/wasm$i.log")"
  done
  if ! start_farm "$CASE/farm"; then
    fail "$CURVE farm" "did not start: $(log_tail "$CASE/farm/coordinator.log") $(log_tail "$CASE/farm/worker0.log")"
    stop_farm
    continue
  fi

  # generator-checks
  mkdir -p "$CASE/not_circom" && cp "$C/${NAME}_cpp/main.cpp" "$CASE/not_circom/"
  "$ZKFARM" circuit add "$CASE/circuit.zkey" --witness-generator "$CASE/not_circom" >"$CASE/add_bad.log" 2>&1
  got_bad=$?
  other_cpp=$WORK/$other/circuit/${NAME}_cpp
  wrong_prime_ok=1
  if [[ -d $other_cpp ]]; then
    "$ZKFARM" circuit add "$CASE/circuit.zkey" --witness-generator "$other_cpp" >"$CASE/add_prime.log" 2>&1
    got_prime=$?
    ((got_prime == 2)) && grep -q "scalar field but the circuit's key is for" "$CASE/add_prime.log" || wrong_prime_ok=0
  fi
  # With --r1cs the generator's outputs and inputs are checked one for one.
  circuit=$("$ZKFARM" circuit add "$CASE/circuit.zkey" --r1cs "$C/$NAME.r1cs" --witness-generator "$C/${NAME}_cpp" \
    2>"$CASE/add.log")
  got_add=$?
  if ((got_bad == 2)) && grep -q "missing calcwit.cpp" "$CASE/add_bad.log" && ((wrong_prime_ok)) && ((got_add == 0)) &&
    [[ -x $ZKFARM_ARTIFACTS/$circuit/witgen/witness-generator ]]; then
    pass "$CURVE generator-checks"
  else
    fail "$CURVE generator-checks" "bad dir: exit $got_bad $(log_tail "$CASE/add_bad.log"); wrong prime ok=$wrong_prime_ok \
$(log_tail "$CASE/add_prime.log" 2>/dev/null); good: exit $got_add $(log_tail "$CASE/add.log")"
    stop_farm
    continue
  fi

  # public-input-map: circuit add recorded where the public input (a, after
  # the output digest) is in an input.json: circom's FNV-1a hash of "a".
  map=$(redis-cli -p "$REDIS_PORT" hget "zkfarm:circuit:$circuit" witgen_public_map)
  if [[ $map == '[null,["af63dc4c8601ec8c",0]]' ]]; then
    pass "$CURVE public-input-map"
  else
    fail "$CURVE public-input-map" "circuit record has witgen_public_map '$map'"
  fi

  # identical: the stored generator, run as the workers run it, against wasm.
  generator=$ZKFARM_ARTIFACTS/$circuit/witgen/witness-generator
  identical=1
  for i in 0 1 2; do
    (cd "$CASE" && "$generator" "in$i.json" "farm$i.wtns" >"gen$i.log" 2>&1) && cmp -s "$CASE/farm$i.wtns" "$CASE/wasm$i.wtns" ||
      identical=0
  done
  if ((identical)); then
    pass "$CURVE identical"
  else
    fail "$CURVE identical" "C++ and wasm witnesses differ (see $CASE/farm*.wtns)"
  fi

  # mixed-job
  node -e '
    const fs = require("fs");
    const [circuit, in0, in1, wtns] = process.argv.slice(1);
    const job = {circuit, partitions: [
      {input: JSON.parse(fs.readFileSync(in0))},
      {witness_base64: fs.readFileSync(wtns).toString("base64")},
      {input: JSON.parse(fs.readFileSync(in1))}]};
    fs.writeFileSync(process.argv[5], JSON.stringify(job));' \
    "$circuit" "$CASE/in0.json" "$CASE/in1.json" "$CASE/wasm2.wtns" "$CASE/mixed.json"
  job=$("$ZKFARM" submit "$CASE/mixed.json" 2>"$CASE/mixed.log")
  if [[ -z $job ]] || ! "$ZKFARM" wait "$job" --timeout 300 --quiet >"$CASE/mixed.status" 2>&1 ||
    ! "$ZKFARM" result "$job" --out "$CASE/mixed" >>"$CASE/mixed.log" 2>&1; then
    fail "$CURVE mixed-job" "$(cat "$CASE/mixed.status" 2>/dev/null) $(log_tail "$CASE/mixed.log")"
  else
    why=""
    for p in 0 1 2; do
      w=$p
      ((p == 1)) && w=2
      ((p == 2)) && w=1
      "${SNARKJS[@]}" groth16 verify "$CASE/vk.json" "$CASE/mixed/public_$p.json" "$CASE/mixed/proof_$p.json" \
        >"$CASE/verify$p.log" 2>&1 || why+="partition $p: snarkjs verify failed $(log_tail "$CASE/verify$p.log"); "
      want=$(public_of "$CASE/wasm$w.wtns" 2)
      got=$(node -e 'console.log(JSON.stringify(require(process.argv[1])))' "$CASE/mixed/public_$p.json")
      [[ $want == "$got" ]] || why+="partition $p: public signals $got, wasm witness has $want; "
    done
    if [[ -z $why ]]; then pass "$CURVE mixed-job"; else fail "$CURVE mixed-job" "$why"; fi
  fi

  # bad inputs the generator refuses (confirmed by the second worker)
  echo '{"a": "3", "b": ["5", "7", "11"], "expected": "1155", "c": "1"}' >"$CASE/unknown.json"
  echo '{"a": "3", "b": ["5", "7"], "expected": "105"}' >"$CASE/short.json"
  echo '{"a": "3", "b": ["5", "7", "11"], "expected": "1156"}' >"$CASE/assert.json"
  job=$("$ZKFARM" submit "$circuit" --input "$CASE/unknown.json" 2>"$CASE/bad-unknown.log")
  expect_job_failure bad-unknown-signal "$job" "partition 0" "Signal not found" "inputs-cpu0" "inputs-cpu1"
  job=$("$ZKFARM" submit "$circuit" --input "$CASE/short.json" 2>"$CASE/bad-short.log")
  expect_job_failure bad-array-size "$job" "partition 0" "Error loading signal b: Not enough values"
  job=$("$ZKFARM" submit "$circuit" --input "$CASE/in0.json" "$CASE/assert.json" 2>"$CASE/bad-assert.log")
  expect_job_failure bad-assertion "$job" "partition 1" "a circuit assertion failed" "Failed assert in template/function InputCheck"

  # bad inputs the CLI refuses before anything is queued
  echo '{"a": "three", "b": ["5", "7", "11"], "expected": "1155"}' >"$CASE/nonnumeric.json"
  expect_submit_refused bad-non-numeric 'a: "three" is not a non-negative decimal integer' "$circuit" --input "$CASE/nonnumeric.json"
  prime=21888242871839275222246405745257275088548364400416034343698204186575808495617
  [[ $CURVE == bls12381 ]] && prime=52435875175126190479447740508185965837690552500527637822603658699938581184513
  echo "{\"a\": \"3\", \"b\": [\"5\", \"$prime\", \"11\"], \"expected\": \"0\"}" >"$CASE/field.json"
  expect_submit_refused bad-out-of-field "b[1]: $prime is not below the" "$circuit" --input "$CASE/field.json"
  node -e 'console.log(JSON.stringify({a: "3", b: ["5", "7", "11"], expected: "1155", pad: "x".repeat(2 << 20)}))' \
    >"$CASE/huge.json"
  expect_submit_refused bad-2mib "bytes; an input is at most 1048576 bytes" "$circuit" --input "$CASE/huge.json"
  # The same values pushed straight into the queue: the coordinator's intake says the same.
  job_json=$(node -e 'console.log(JSON.stringify({id: "raw-field", circuit: process.argv[1], partitions: [{input: require(process.argv[2])}]}))' \
    "$circuit" "$CASE/field.json")
  redis-cli -p "$REDIS_PORT" lpush zkfarm:queue:normal "$job_json" >/dev/null
  for _ in $(seq 300); do "$ZKFARM" status raw-field >/dev/null 2>&1 && break; sleep 0.1; done
  "$ZKFARM" wait raw-field --timeout 120 --quiet >"$CASE/raw-field.status" 2>&1
  if grep -q '"error_code":"badInput"' "$CASE/raw-field.status" && grep -qF "b[1]: $prime is not below the" "$CASE/raw-field.status"; then
    pass "$CURVE bad-out-of-field-intake"
  else
    fail "$CURVE bad-out-of-field-intake" "$(cat "$CASE/raw-field.status")"
  fi

  # An input without its public input is refused at intake: the coordinator
  # takes public inputs from the input itself, never from a worker.
  job_json=$(node -e 'console.log(JSON.stringify({id: "raw-no-public", circuit: process.argv[1], partitions: [{input: {b: ["5", "7", "11"], expected: "1155"}}]}))' \
    "$circuit")
  redis-cli -p "$REDIS_PORT" lpush zkfarm:queue:normal "$job_json" >/dev/null
  for _ in $(seq 300); do "$ZKFARM" status raw-no-public >/dev/null 2>&1 && break; sleep 0.1; done
  "$ZKFARM" wait raw-no-public --timeout 120 --quiet >"$CASE/raw-no-public.status" 2>&1
  if grep -q '"error_code":"badInput"' "$CASE/raw-no-public.status" &&
    grep -qF "partition 0: input has no value for public signal 2" "$CASE/raw-no-public.status"; then
    pass "$CURVE bad-missing-public-input"
  else
    fail "$CURVE bad-missing-public-input" "$(cat "$CASE/raw-no-public.status")"
  fi

  # still-serving
  job=$("$ZKFARM" submit "$circuit" --input "$CASE/in2.json" "$CASE/in0.json" 2>"$CASE/after.log")
  if [[ -n $job ]] && "$ZKFARM" wait "$job" --timeout 300 --quiet >"$CASE/after.status" 2>&1 &&
    "$ZKFARM" result "$job" --out "$CASE/after" >>"$CASE/after.log" 2>&1 &&
    "${SNARKJS[@]}" groth16 verify "$CASE/vk.json" "$CASE/after/public_0.json" "$CASE/after/proof_0.json" >/dev/null 2>&1; then
    pass "$CURVE still-serving"
  else
    fail "$CURVE still-serving" "$(cat "$CASE/after.status" 2>/dev/null) $(log_tail "$CASE/after.log")"
  fi

  # killed-generating: only a slow worker serves, it is killed mid-generation,
  # then a normal one takes over.
  kill "${pids[-1]}" "${pids[-2]}" 2>/dev/null
  wait "${pids[-1]}" "${pids[-2]}" 2>/dev/null
  unset 'pids[-1]' 'pids[-1]'
  "$BIN/worker/zkfarm-worker" --cpu --id inputs-slow --coordinator "$COORDINATOR_ENDPOINT" --artifacts "$ZKFARM_ARTIFACTS" \
    --witgen-delay-ms 600000 --metrics-listen "" >"$CASE/farm/worker-slow.log" 2>&1 &
  slow=$!
  pids+=("$slow")
  job=$("$ZKFARM" submit "$circuit" --input "$CASE/in1.json" 2>"$CASE/killed.log")
  if wait_for_log "$CASE/farm/worker-slow.log" "received: job $job" 60; then
    # status: the partition waits for witness generation (the worker's heartbeats say so).
    waiting=0
    for _ in $(seq 100); do
      "$ZKFARM" status "$job" 2>/dev/null | grep -q '"waiting_for_witness":1' && { waiting=1; break; }
      sleep 0.1
    done
    if ((waiting)); then
      pass "$CURVE status-waiting-for-witness"
    else
      fail "$CURVE status-waiting-for-witness" "zkfarm status never showed it: $("$ZKFARM" status "$job" 2>&1)"
    fi
    kill -KILL "$slow"
    wait "$slow" 2>/dev/null
    "$BIN/worker/zkfarm-worker" --cpu --id inputs-after --coordinator "$COORDINATOR_ENDPOINT" \
      --artifacts "$ZKFARM_ARTIFACTS" --metrics-listen "" >"$CASE/farm/worker-after.log" 2>&1 &
    pids+=($!)
    if "$ZKFARM" wait "$job" --timeout 300 --quiet >"$CASE/killed.status" 2>&1 &&
      grep -q '"attempts":0' "$CASE/killed.status" &&
      "$ZKFARM" result "$job" --out "$CASE/killed" >>"$CASE/killed.log" 2>&1 &&
      [[ $(node -e 'console.log(JSON.stringify(require(process.argv[1])))' "$CASE/killed/public.json") == "$(public_of "$CASE/wasm1.wtns" 2)" ]] &&
      [[ $(grep -c "received: job $job" "$CASE/farm/worker-after.log") == 1 ]]; then
      pass "$CURVE killed-generating"
    else
      fail "$CURVE killed-generating" "$(cat "$CASE/killed.status") $(log_tail "$CASE/killed.log") $(log_tail "$CASE/farm/worker-after.log")"
    fi
  else
    fail "$CURVE killed-generating" "the slow worker never received the task: $(log_tail "$CASE/farm/worker-slow.log")"
  fi
  # generator-not-replaced (last: it leaves the variant registered): another
  # build of the circuit's generator (the same C++ with one more symbol: it
  # passes every check against the key) is refused without
  # --replace-witness-generator, the record and the store keeping the
  # original; the registrant's explicit replacement is accepted. Each add
  # compiles the generator (about a minute here), so this is two adds; that
  # the same generator again is harmless is farm_api_test's.
  variant=$CASE/variant_cpp
  rm -rf "$variant" && cp -r "$C/${NAME}_cpp" "$variant"
  echo 'extern "C" const char zkfarm_variant[] = "another build";' >>"$variant/main.cpp"
  recorded() { redis-cli -p "$REDIS_PORT" hget "zkfarm:circuit:$circuit" witgen_sha256; }
  stored() { sha256sum "$ZKFARM_ARTIFACTS/$circuit/witgen/witness-generator" | cut -d' ' -f1; }
  original=$(recorded)
  "$ZKFARM" circuit add "$CASE/circuit.zkey" --witness-generator "$variant" >"$CASE/add_variant.log" 2>&1
  got_variant=$?
  after_refusal="$(recorded) $(stored)"
  "$ZKFARM" circuit add "$CASE/circuit.zkey" --r1cs "$C/$NAME.r1cs" --witness-generator "$variant" \
    --replace-witness-generator >"$CASE/add_replace.log" 2>&1
  got_replace=$?
  replaced="$(recorded) $(stored)"
  if ((got_variant == 2)) && grep -q "already has a witness generator" "$CASE/add_variant.log" &&
    [[ $after_refusal == "$original $original" ]] && ((got_replace == 0)) &&
    [[ $replaced != "$original $original" && ${replaced% *} == "${replaced#* }" ]]; then
    pass "$CURVE generator-not-replaced"
  else
    fail "$CURVE generator-not-replaced" "variant: exit $got_variant $(log_tail "$CASE/add_variant.log"); record and \
store after it: $after_refusal (original $original); replace: exit $got_replace -> $replaced \
$(log_tail "$CASE/add_replace.log")"
  fi
  stop_farm
done

echo "inputs: $passed passed, $failed failed"
((failed == 0 && passed > 0))
