#!/bin/bash
# run_interop.sh -- checks the zkfarm CLI against circom2 + snarkjs, on bn128 and bls12381.
#
# For each curve, in a temp dir: compile circuits/multiplier_poseidon.circom with
# circom2 (circomlib copied next to it: circom2 cannot read outside its working
# dir), compute the witness with snarkjs, make a 2^10 powers of tau (cached),
# groth16 setup plus one contribution, export the verification key, and prove
# and verify with snarkjs. Then, with the zkfarm CLI:
#   a  zkfarm prove        -> snarkjs verify accepts; public.json matches snarkjs's
#   b  snarkjs prove       -> zkfarm verify exits 0
#   c  tampered proof/public input -> zkfarm verify exits 1, snarkjs rejects too
#   d  zkfarm export-vk    == snarkjs zkey export verificationkey (deep-equal)
#   e  zkfarm setup        -> the key works with snarkjs prove/verify and with zkfarm prove
#   f  malformed inputs    -> zkfarm exits 2 naming the file, never a signal
#   g  the farm            -> a 10-partition job through a real farm (redis,
#                             zkfarm-coordinator, two CPU zkfarm-workers, via
#                             tools/demo.sh): every partition proof passes
#                             zkfarm verify and snarkjs groth16 verify
# Each check prints "PASS <curve> <check>" or "FAIL <curve> <check>: <why>"; the
# last line is "interop: N passed, M failed" and the exit status is 0 only when
# nothing failed.
#
# Usage: tests/interop/run_interop.sh [--fixtures-only] [--keep] [--curve bn128|bls12381]
#   --fixtures-only  only the circom/snarkjs part (needs no zkfarm binary)
#   --keep           keep the temp dir (its path is printed) to inspect files
#   --curve C        one curve only (the wrong-curve check is then skipped)
# Environment:
#   ZKFARM_CLI            zkfarm binary (default: <repo>/bazel-bin/cli/zkfarm)
#   ZKFARM_PROVE          the lean zkfarm-prove binary (default: beside ZKFARM_CLI)
#   ZKFARM_INTEROP_CACHE  where prepared powers of tau are cached (default
#                         <repo>/.cache/interop, git-ignored; "off" disables)
# Needs node and tests/interop/node_modules (tools/install_deps.sh runs npm ci).
set -uo pipefail

# readlink -f: under `bazel test //tests:interop` this script is a runfiles
# symlink; node_modules lives beside the real file in the source tree.
HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
ROOT=$(cd "$HERE/../.." && pwd)
CLI=${ZKFARM_CLI:-$ROOT/bazel-bin/cli/zkfarm}
[[ $CLI == /* ]] || CLI=$PWD/$CLI  # checks run from the temp dir
# zkfarm-prove: `zkfarm prove` alone (rapidsnark's argument order, without the
# farm commands' libraries), built beside the CLI.
PROVE_BIN=${ZKFARM_PROVE:-$(dirname "$CLI")/zkfarm-prove}
[[ $PROVE_BIN == /* ]] || PROVE_BIN=$PWD/$PROVE_BIN
CACHE=${ZKFARM_INTEROP_CACHE:-$ROOT/.cache/interop}
[[ $CACHE == off ]] && CACHE=""
NODE_MODULES=$HERE/node_modules
CIRCUIT=multiplier_poseidon
PTAU_POWER=10  # the circuit has ~530 constraints + 3 public: domain 2^10

fixtures_only=0
keep=0
curves=(bn128 bls12381)
while (($#)); do
  case $1 in
    --fixtures-only) fixtures_only=1 ;;
    --keep) keep=1 ;;
    --curve)
      [[ ${2:-} == bn128 || ${2:-} == bls12381 ]] || { echo "run_interop.sh: --curve takes bn128 or bls12381" >&2; exit 2; }
      curves=("$2")
      shift
      ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_interop.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

for tool in node cp head; do
  command -v "$tool" >/dev/null || { echo "run_interop.sh: $tool not found; run tools/install_deps.sh" >&2; exit 2; }
done
for package in snarkjs circom2 circomlib @noble/curves; do
  [[ -d $NODE_MODULES/$package ]] || {
    echo "run_interop.sh: $NODE_MODULES/$package missing; run tools/install_deps.sh (npm ci in tests/interop)" >&2
    exit 2
  }
done

SNARKJS=(node "$NODE_MODULES/snarkjs/build/cli.cjs")
CIRCOM=(node "$NODE_MODULES/circom2/cli.js")
UTIL=(node "$HERE/interop_util.js")
SNARKJS_VERSION=$(node -p "require('$NODE_MODULES/snarkjs/package.json').version")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/zkfarm-interop.XXXXXX")
if ((keep)); then
  echo "work dir: $WORK (kept)"
else
  trap 'rm -rf "$WORK"' EXIT
fi

passed=0
failed=0

pass() {
  echo "PASS $1"
  passed=$((passed + 1))
}

fail() {
  echo "FAIL $1: $2"
  failed=$((failed + 1))
}

# The last lines of a log on one line, colour codes removed, for FAIL messages.
log_tail() {
  tail -n 4 "$1" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' | tr '\n' ' ' | cut -c1-400
}

# Describes an exit status that was not the one wanted.
describe_status() {
  local got=$1 want=$2
  if ((got >= 128)); then
    echo "killed by signal $((got - 128)) (crash), wanted exit $want"
  else
    echo "exit $got, wanted $want"
  fi
}

# expect_status NAME WANT LOG CMD...: PASS when CMD exits with WANT.
expect_status() {
  local name=$1 want=$2 log=$3
  shift 3
  "$@" >"$log" 2>&1
  local got=$?
  if ((got == want)); then
    pass "$name"
    return 0
  fi
  fail "$name" "$(describe_status "$got" "$want"): $(log_tail "$log")"
  return 1
}

# expect_rejected NAME LOG CMD...: PASS when CMD (snarkjs verify) exits non-zero
# without crashing.
expect_rejected() {
  local name=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1
  local got=$?
  if ((got != 0 && got < 128)); then
    pass "$name"
    return 0
  fi
  fail "$name" "$(describe_status "$got" "non-zero"): $(log_tail "$log")"
  return 1
}

# expect_input_error NAME FILE LOG CMD...: PASS when CMD exits 2 and its output
# names FILE (basename is enough).
expect_input_error() {
  local name=$1 file=$2 log=$3
  shift 3
  "$@" >"$log" 2>&1
  local got=$?
  if ((got != 2)); then
    fail "$name" "$(describe_status "$got" 2): $(log_tail "$log")"
    return 1
  fi
  if ! grep -qF "$(basename "$file")" "$log"; then
    fail "$name" "exit 2 but the message does not name $(basename "$file"): $(log_tail "$log")"
    return 1
  fi
  pass "$name"
}

# prepared_ptau CURVE OUT LOG: a phase-2-ready powers of tau of 2^PTAU_POWER,
# from the cache when there, else made fresh (new, one contribution, prepare).
prepared_ptau() {
  local curve=$1 out=$2 log=$3
  local cached="$CACHE/ptau-$curve-$PTAU_POWER-snarkjs$SNARKJS_VERSION.ptau"
  if [[ -n $CACHE && -s $cached ]]; then
    cp "$cached" "$out" && echo "cached $cached" >"$log"
    return
  fi
  local entropy
  entropy="zkfarm-interop-$RANDOM-$(date +%s%N)"
  {
    "${SNARKJS[@]}" powersoftau new "$curve" "$PTAU_POWER" pot_0.ptau &&
      "${SNARKJS[@]}" powersoftau contribute pot_0.ptau pot_1.ptau --name=zkfarm-interop -e="$entropy" &&
      "${SNARKJS[@]}" powersoftau prepare phase2 pot_1.ptau "$out"
  } >"$log" 2>&1 || return 1
  rm -f pot_0.ptau pot_1.ptau
  if [[ -n $CACHE ]] && mkdir -p "$CACHE" 2>/dev/null; then
    cp "$out" "$cached.tmp.$$" && mv "$cached.tmp.$$" "$cached"
  fi
  return 0
}

# make_fixtures CURVE DIR: circom + snarkjs artifacts in DIR. Returns non-zero
# (after printing FAIL) when a step fails; later steps are then pointless.
make_fixtures() {
  local curve=$1 dir=$2
  local started=$SECONDS
  mkdir -p "$dir/build" && cd "$dir" || return 1

  if ! { cp "$HERE/circuits/$CIRCUIT.circom" build/ &&
    cp "$HERE/circuits/$CIRCUIT.input.json" input.json &&
    cp -r "$NODE_MODULES/circomlib/circuits" build/circomlib; }; then
    fail "$curve fixture/copy-sources" "cp failed"
    return 1
  fi
  if (cd build && "${CIRCOM[@]}" "$CIRCUIT.circom" --r1cs --wasm --prime "$curve" -l circomlib -o .) >compile.log 2>&1 &&
    mv "build/$CIRCUIT.r1cs" circuit.r1cs; then
    pass "$curve fixture/circom2-compile"
  else
    fail "$curve fixture/circom2-compile" "$(log_tail compile.log)"
    return 1
  fi

  expect_status "$curve fixture/snarkjs-witness" 0 witness.log \
    "${SNARKJS[@]}" wtns calculate "build/${CIRCUIT}_js/$CIRCUIT.wasm" input.json witness.wtns || return 1
  expect_status "$curve fixture/witness-satisfies-r1cs" 0 wtns_check.log \
    "${SNARKJS[@]}" wtns check circuit.r1cs witness.wtns || return 1

  if prepared_ptau "$curve" pot_final.ptau ptau.log; then
    pass "$curve fixture/powers-of-tau-2^$PTAU_POWER"
  else
    fail "$curve fixture/powers-of-tau-2^$PTAU_POWER" "$(log_tail ptau.log)"
    return 1
  fi

  # One phase-2 contribution so delta != 1 (a key with delta = 1 hides bugs).
  local entropy
  entropy="zkfarm-interop-$RANDOM-$(date +%s%N)"
  expect_status "$curve fixture/groth16-setup" 0 setup.log bash -c '
    "$@" groth16 setup circuit.r1cs pot_final.ptau circuit_0.zkey &&
      "$@" zkey contribute circuit_0.zkey circuit.zkey --name=zkfarm-interop -e="'"$entropy"'"' \
    _ "${SNARKJS[@]}" || return 1
  rm -f circuit_0.zkey
  expect_status "$curve fixture/export-vk" 0 export_vk.log \
    "${SNARKJS[@]}" zkey export verificationkey circuit.zkey vk.json || return 1
  expect_status "$curve fixture/snarkjs-prove" 0 snarkjs_prove.log \
    "${SNARKJS[@]}" groth16 prove circuit.zkey witness.wtns snarkjs_proof.json snarkjs_public.json || return 1
  expect_status "$curve fixture/snarkjs-verify" 0 snarkjs_verify.log \
    "${SNARKJS[@]}" groth16 verify vk.json snarkjs_public.json snarkjs_proof.json || return 1
  echo "     $curve fixtures took $((SECONDS - started)) s"
}

# cli_checks CURVE DIR OTHER_DIR: checks a-f against the fixtures in DIR.
# OTHER_DIR holds the other curve's fixtures (for the wrong-curve witness), or "".
cli_checks() {
  local curve=$1 dir=$2 other_dir=$3
  local started=$SECONDS
  cd "$dir" || return 1

  # (a) our proof, snarkjs's verifier.
  if expect_status "$curve a/zkfarm-prove" 0 a_prove.log \
    "$CLI" prove circuit.zkey witness.wtns zk_proof.json zk_public.json; then
    expect_status "$curve a/snarkjs-verifies-zkfarm-proof" 0 a_verify.log \
      "${SNARKJS[@]}" groth16 verify vk.json zk_public.json zk_proof.json
    expect_status "$curve a/public-json-matches-snarkjs" 0 a_public.log \
      "${UTIL[@]}" json-equal zk_public.json snarkjs_public.json
    expect_status "$curve a/proof-json-keys-match-snarkjs" 0 a_keys.log \
      "${UTIL[@]}" same-keys zk_proof.json snarkjs_proof.json
  fi
  if expect_status "$curve a/zkfarm-prove-seeded" 0 a_prove_seed.log \
    "$CLI" prove circuit.zkey witness.wtns zk_proof_seed.json zk_public_seed.json --seed 7; then
    expect_status "$curve a/snarkjs-verifies-seeded-proof" 0 a_verify_seed.log \
      "${SNARKJS[@]}" groth16 verify vk.json zk_public_seed.json zk_proof_seed.json
    # The lean binary is the same prover: the same bytes for the same seed.
    if expect_status "$curve a/zkfarm-prove-binary" 0 a_prove_lean.log \
      "$PROVE_BIN" circuit.zkey witness.wtns zk_proof_lean.json zk_public_lean.json --seed 7; then
      if cmp -s zk_proof_lean.json zk_proof_seed.json && cmp -s zk_public_lean.json zk_public_seed.json; then
        pass "$curve a/zkfarm-prove-binary-same-bytes"
      else
        fail "$curve a/zkfarm-prove-binary-same-bytes" "zkfarm-prove and zkfarm prove --seed 7 wrote different files"
      fi
    fi
  fi

  # (b) snarkjs's proof, our verifier.
  expect_status "$curve b/zkfarm-verifies-snarkjs-proof" 0 b_verify.log \
    "$CLI" verify vk.json snarkjs_public.json snarkjs_proof.json
  [[ -s zk_proof.json ]] && expect_status "$curve b/zkfarm-verifies-own-proof" 0 b_verify_own.log \
    "$CLI" verify vk.json zk_public.json zk_proof.json

  # (c) tampering: both verifiers must reject. Our proof when we have one.
  local proof=snarkjs_proof.json public=snarkjs_public.json
  [[ -s zk_proof.json && -s zk_public.json ]] && proof=zk_proof.json public=zk_public.json
  local tampered
  if ! { "${UTIL[@]}" digit "$proof" c_pi_a_digit.json pi_a &&
    "${UTIL[@]}" swap "$proof" c_pi_a_pi_c_swapped.json pi_a pi_c &&
    "${UTIL[@]}" double-g1 "$curve" "$proof" c_pi_a_doubled.json pi_a; }; then
    fail "$curve c/make-tampered-proofs" "interop_util.js failed"
  fi
  for tampered in c_pi_a_digit.json c_pi_a_pi_c_swapped.json c_pi_a_doubled.json; do
    [[ -s $tampered ]] || continue
    expect_status "$curve c/zkfarm-rejects-${tampered%.json}" 1 "$tampered.zkfarm.log" \
      "$CLI" verify vk.json "$public" "$tampered"
    expect_rejected "$curve c/snarkjs-rejects-${tampered%.json}" "$tampered.snarkjs.log" \
      "${SNARKJS[@]}" groth16 verify vk.json "$public" "$tampered"
  done
  local index
  for index in 0 1; do
    "${UTIL[@]}" bump-public "$public" "c_public_$index.json" "$index" || { fail "$curve c/make-tampered-public" "interop_util.js failed"; continue; }
    expect_status "$curve c/zkfarm-rejects-public-$index-plus-1" 1 "c_public_$index.zkfarm.log" \
      "$CLI" verify vk.json "c_public_$index.json" "$proof"
    expect_rejected "$curve c/snarkjs-rejects-public-$index-plus-1" "c_public_$index.snarkjs.log" \
      "${SNARKJS[@]}" groth16 verify vk.json "c_public_$index.json" "$proof"
  done

  # (d) verification key export.
  expect_status "$curve d/zkfarm-export-vk" 0 d_export.log "$CLI" export-vk circuit.zkey zk_vk.json &&
    expect_status "$curve d/vk-equals-snarkjs" 0 d_equal.log "${UTIL[@]}" json-equal zk_vk.json vk.json

  # (e) our setup, snarkjs's prover and verifier (and ours).
  if expect_status "$curve e/zkfarm-setup" 0 e_setup.log "$CLI" setup circuit.r1cs zk_setup.zkey --seed 3 &&
    expect_status "$curve e/snarkjs-export-vk-of-zkfarm-key" 0 e_export.log \
      "${SNARKJS[@]}" zkey export verificationkey zk_setup.zkey zk_setup_vk.json; then
    expect_status "$curve e/snarkjs-prove-with-zkfarm-key" 0 e_snarkjs_prove.log \
      "${SNARKJS[@]}" groth16 prove zk_setup.zkey witness.wtns e_snarkjs_proof.json e_snarkjs_public.json &&
      expect_status "$curve e/snarkjs-verifies-snarkjs-proof-zkfarm-key" 0 e_snarkjs_verify.log \
        "${SNARKJS[@]}" groth16 verify zk_setup_vk.json e_snarkjs_public.json e_snarkjs_proof.json
    expect_status "$curve e/zkfarm-prove-with-zkfarm-key" 0 e_zk_prove.log \
      "$CLI" prove zk_setup.zkey witness.wtns e_zk_proof.json e_zk_public.json &&
      expect_status "$curve e/snarkjs-verifies-zkfarm-proof-zkfarm-key" 0 e_zk_verify.log \
        "${SNARKJS[@]}" groth16 verify zk_setup_vk.json e_zk_public.json e_zk_proof.json
    expect_status "$curve e/zkfarm-export-vk-of-zkfarm-key" 0 e_zk_export.log \
      "$CLI" export-vk zk_setup.zkey e_zk_vk.json &&
      expect_status "$curve e/zkfarm-vk-equals-snarkjs-vk-of-zkfarm-key" 0 e_vk_equal.log \
        "${UTIL[@]}" json-equal e_zk_vk.json zk_setup_vk.json
  fi

  # (f) malformed and hostile inputs: exit 2, a message naming the file, no signal.
  local size
  size=$(stat -c %s circuit.zkey)
  head -c $((size / 2)) circuit.zkey >f_truncated.zkey
  : >f_empty.zkey
  size=$(stat -c %s circuit.r1cs)
  head -c $((size / 2)) circuit.r1cs >f_truncated.r1cs
  "${UTIL[@]}" drop-witness witness.wtns f_short.wtns || fail "$curve f/make-short-witness" "interop_util.js failed"
  printf 'not json {' >f_garbage_vk.json
  printf '[1, 2' >f_garbage_public.json
  printf '{"pi_a": 7}' >f_garbage_proof.json
  node -e 'const p = require(process.argv[1]); p.pop(); console.log(JSON.stringify(p));' \
    "$dir/snarkjs_public.json" >f_public_too_short.json

  expect_input_error "$curve f/prove-truncated-zkey" f_truncated.zkey f1.log \
    "$CLI" prove f_truncated.zkey witness.wtns f_proof.json f_public.json
  expect_input_error "$curve f/prove-empty-zkey" f_empty.zkey f2.log \
    "$CLI" prove f_empty.zkey witness.wtns f_proof.json f_public.json
  expect_input_error "$curve f/export-vk-truncated-zkey" f_truncated.zkey f3.log \
    "$CLI" export-vk f_truncated.zkey f_vk.json
  expect_input_error "$curve f/setup-truncated-r1cs" f_truncated.r1cs f4.log \
    "$CLI" setup f_truncated.r1cs f_setup.zkey
  [[ -s f_short.wtns ]] && expect_input_error "$curve f/prove-witness-wrong-length" f_short.wtns f5.log \
    "$CLI" prove circuit.zkey f_short.wtns f_proof.json f_public.json
  if [[ -n $other_dir && -s $other_dir/witness.wtns ]]; then
    cp "$other_dir/witness.wtns" f_other_curve.wtns
    expect_input_error "$curve f/prove-wrong-curve-witness" f_other_curve.wtns f6.log \
      "$CLI" prove circuit.zkey f_other_curve.wtns f_proof.json f_public.json
  else
    echo "SKIP $curve f/prove-wrong-curve-witness (no fixtures for the other curve)"
  fi
  expect_input_error "$curve f/prove-arguments-swapped" witness.wtns f7.log \
    "$CLI" prove witness.wtns circuit.zkey f_proof.json f_public.json
  expect_input_error "$curve f/verify-garbage-vk" f_garbage_vk.json f8.log \
    "$CLI" verify f_garbage_vk.json snarkjs_public.json snarkjs_proof.json
  expect_input_error "$curve f/verify-garbage-public" f_garbage_public.json f9.log \
    "$CLI" verify vk.json f_garbage_public.json snarkjs_proof.json
  expect_input_error "$curve f/verify-garbage-proof" f_garbage_proof.json f10.log \
    "$CLI" verify vk.json snarkjs_public.json f_garbage_proof.json
  expect_input_error "$curve f/verify-public-count-mismatch" f_public_too_short.json f11.log \
    "$CLI" verify vk.json f_public_too_short.json snarkjs_proof.json
  expect_input_error "$curve f/verify-missing-file" f_no_such_proof.json f12.log \
    "$CLI" verify vk.json snarkjs_public.json f_no_such_proof.json
  # Device memory plans, made without a GPU: everything resident without a
  # budget; too small a budget exits 1 naming the bytes it needs, and that
  # many bytes fit; a malformed budget is an input error naming it.
  if expect_status "$curve p/plan-too-small-exits-1" 1 p1.log \
    "$CLI" plan circuit.zkey --device-memory-budget none,1MiB; then
    if grep -q '^none: budget none: resident' p1.log && grep -q '^1MiB: does not fit: the circuit needs at least' p1.log; then
      pass "$curve p/plan-says-resident-and-needed"
    else
      fail "$curve p/plan-says-resident-and-needed" "$(log_tail p1.log)"
    fi
    local needed
    needed=$(grep -o 'needs at least [0-9.]* GiB ([0-9]* bytes)' p1.log | grep -o '([0-9]*' | tr -d '(')
    expect_status "$curve p/plan-needed-bytes-fit" 0 p2.log "$CLI" plan circuit.zkey --device-memory-budget "$needed"
  fi
  expect_input_error "$curve p/plan-bad-budget" 24Gib p3.log \
    "$CLI" plan circuit.zkey --device-memory-budget 24Gib
  "$CLI" plan circuit.zkey --device-memory-budget none,1MiB --json >p4.json 2>p4.log
  local status=$?
  if ((status == 1)) && node -e '
    const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const ok = p.length === 2 && p[0].fits === true && p[0].budget_bytes === 0 && p[0].streamed_bytes === 0 &&
      p[1].fits === false && p[1].budget === "1MiB" && p[1].needed_bytes > 1048576 && /needs at least/.test(p[1].plan);
    process.exit(ok ? 0 : 1);' p4.json >>p4.log 2>&1; then
    pass "$curve p/plan-json"
  else
    fail "$curve p/plan-json" "$(describe_status "$status" 1): $(head -c 300 p4.json) $(log_tail p4.log)"
  fi
  echo "     $curve zkfarm checks took $((SECONDS - started)) s"
}

echo "interop: snarkjs $SNARKJS_VERSION, circom2 $(node -p "require('$NODE_MODULES/circom2/package.json').version"), curves ${curves[*]}, work dir $WORK"
cli_ok=1
if ((!fixtures_only)) && [[ ! -x $CLI ]]; then
  fail "cli-present" "$CLI missing (build it: bazel build //cli:zkfarm; or set ZKFARM_CLI)"
  cli_ok=0
fi

declare -A fixtures_ok
for curve in "${curves[@]}"; do
  fixtures_ok[$curve]=0
  make_fixtures "$curve" "$WORK/$curve" && fixtures_ok[$curve]=1
done

if ((!fixtures_only && cli_ok)); then
  for curve in "${curves[@]}"; do
    if ((!fixtures_ok[$curve])); then
      fail "$curve zkfarm-checks" "not run: fixtures failed"
      continue
    fi
    other_dir=""
    for other in "${curves[@]}"; do
      [[ $other != "$curve" ]] && ((fixtures_ok[$other])) && other_dir=$WORK/$other
    done
    cli_checks "$curve" "$WORK/$curve" "$other_dir"
  done
fi

# g: the farm end to end, its results checked by snarkjs (tools/demo.sh runs
# `snarkjs groth16 verify` on every partition when node_modules is present).
farm_check() {
  local curve=$1 bin
  bin=$(dirname "$(dirname "$(readlink -f "$CLI")")")
  local log=$WORK/farm-$curve.log
  ZKFARM_SKIP_DEPS=1 ZKFARM_BIN=$bin timeout 600 "$ROOT/tools/demo.sh" --curve "${curve/bn128/bn254}" \
    --partitions 10 >"$log" 2>&1
  local status=$? verified
  # The witness job's partitions ("partition N: ..."); the demo's input job
  # beside it prints "input partition N: ..." and is checked by run_inputs.sh.
  verified=$(grep -cE '^partition [0-9]+: zkfarm verify OK, snarkjs groth16 verify OK' "$log")
  if ((status == 0 && verified == 10)); then
    pass "$curve farm-10-partitions-snarkjs-verified"
  else
    fail "$curve farm-10-partitions-snarkjs-verified" "demo exit $status, $verified of 10 partitions verified by both: $(log_tail "$log")"
  fi
}
if ((!fixtures_only && cli_ok)); then
  for curve in "${curves[@]}"; do farm_check "$curve"; done
fi

echo "interop: $passed passed, $failed failed"
((failed == 0))
