#!/usr/bin/env bash
# run_fuzz.sh -- builds the formats/ libFuzzer targets with clang (libFuzzer +
# AddressSanitizer + UndefinedBehaviorSanitizer) and runs each one for
# FUZZ_SECONDS seconds from its seed corpus. Fails if any target crashes,
# leaks, trips a sanitizer, times out on one input, or fails to build.
#
#   tests/fuzz/run_fuzz.sh                # all targets, 15 s each
#   FUZZ_SECONDS=60 tests/fuzz/run_fuzz.sh zkey_fuzz pce_fuzz
#
# Targets: r1cs_fuzz wtns_fuzz zkey_fuzz pce_fuzz snarkjs_json_fuzz
# (formats/<target>.cc). Seeds: tests/fuzz/corpus/<target>/ (checked in;
# `--refresh-seeds` rebuilds them from formats/testdata, which needs g++).
# New inputs found while fuzzing go to a scratch corpus, not into the repo;
# a crashing input is kept under $FUZZ_OUT (default: a temp dir, printed).
#
# Environment: FUZZ_SECONDS (default 15), FUZZ_CXX (default clang++-14 or
# clang++), FUZZ_OUT (where builds, scratch corpora and crash inputs go).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECONDS_PER_TARGET=${FUZZ_SECONDS:-15}
CXX=${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++)}
OUT=${FUZZ_OUT:-$(mktemp -d /tmp/zkfarm-fuzz.XXXXXX)}
mkdir -p "$OUT"
CORPUS=$ROOT/tests/fuzz/corpus
ALL_TARGETS=(r1cs_fuzz wtns_fuzz zkey_fuzz pce_fuzz snarkjs_json_fuzz)

# Library sources each target links (formats/*.cc).
declare -A SOURCES=(
  [r1cs_fuzz]="binfile r1cs"
  [wtns_fuzz]="binfile wtns"
  [zkey_fuzz]="binfile r1cs zkey pce"
  [pce_fuzz]="binfile r1cs pce"
  [snarkjs_json_fuzz]="binfile snarkjs_json"
)

log() { echo "[fuzz] $*"; }

refresh_seeds() {
  local td=$ROOT/formats/testdata tool=$OUT/formats_interop
  log "building formats_interop to make PCE seeds"
  g++ -std=c++20 -O1 -I"$ROOT" "$ROOT/formats/formats_interop.cc" "$ROOT"/formats/{binfile,r1cs,wtns,zkey,pce,snarkjs_json}.cc \
    -lcrypto -lpthread -o "$tool"
  mkdir -p "$CORPUS"/{r1cs_fuzz,wtns_fuzz,zkey_fuzz,pce_fuzz,snarkjs_json_fuzz}
  for curve in bn128 bls12381; do
    cp "$td/${curve}_mul.r1cs" "$CORPUS/r1cs_fuzz/${curve}.r1cs"
    cp "$td/${curve}_mul.wtns" "$CORPUS/wtns_fuzz/${curve}.wtns"
    cp "$td/${curve}_mul.zkey" "$CORPUS/zkey_fuzz/${curve}.zkey"
    cp "$td/${curve}_mul_0000.zkey" "$CORPUS/zkey_fuzz/${curve}_0000.zkey"
    for json in verification_key proof public; do
      cp "$td/${curve}_${json}.json" "$CORPUS/snarkjs_json_fuzz/${curve}_${json}.json"
    done
    "$tool" pce-from-r1cs "$curve" "$td/${curve}_mul.r1cs" "$CORPUS/pce_fuzz/${curve}_r1cs.pce"
    "$tool" pce-from-zkey "$curve" "$td/${curve}_mul.zkey" "$CORPUS/pce_fuzz/${curve}_zkey.pce"
  done
  log "seeds written under $CORPUS"
}

targets=()
for arg in "$@"; do
  case $arg in
    --refresh-seeds) refresh_seeds ;;
    *) targets+=("$arg") ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${ALL_TARGETS[@]}")

[[ -x $CXX ]] || { echo "[fuzz] no clang++ found (set FUZZ_CXX)" >&2; exit 2; }
log "compiler $CXX, $SECONDS_PER_TARGET s per target, output in $OUT"
mkdir -p "$OUT/obj"

SAN=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
# kernels/ computes tower constants at compile time: more than clang's default
# constexpr step budget.
FLAGS=(-std=c++20 -O1 -g -I"$ROOT" -fconstexpr-steps=200000000)

# Objects are shared between targets; compiled one at a time (2-core machines).
compile_object() {
  local name=$1 obj=$OUT/obj/$1.o
  # Rebuild when the source or any formats/ or kernels/ header is newer.
  if [[ ! -f $obj || $ROOT/formats/$name.cc -nt $obj ]] ||
    [[ -n $(find "$ROOT/formats" "$ROOT/kernels" -maxdepth 1 -name '*.h' -newer "$obj" -print -quit) ]]; then
    log "compile formats/$name.cc"
    "$CXX" "${FLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer-no-link -c "$ROOT/formats/$name.cc" -o "$obj"
  fi
}

passed=0
failed=0
results=()
for target in "${targets[@]}"; do
  [[ -n ${SOURCES[$target]:-} ]] || { echo "[fuzz] unknown target $target" >&2; exit 2; }
  status=PASS
  objs=()
  for src in ${SOURCES[$target]}; do
    if ! compile_object "$src"; then status="FAIL (build)"; fi
    objs+=("$OUT/obj/$src.o")
  done
  binary=$OUT/$target
  if [[ $status == PASS ]]; then
    log "link $target"
    if ! "$CXX" "${FLAGS[@]}" "${SAN[@]}" -fsanitize=fuzzer "$ROOT/formats/$target.cc" "${objs[@]}" \
      -lcrypto -lpthread -o "$binary"; then
      status="FAIL (build)"
    fi
  fi
  if [[ $status == PASS ]]; then
    seeds=$CORPUS/$target
    scratch=$OUT/corpus/$target
    mkdir -p "$scratch" "$OUT/crashes/$target"
    [[ -d $seeds ]] || { log "no seeds in $seeds (run with --refresh-seeds)"; mkdir -p "$seeds"; }
    log "run $target for $SECONDS_PER_TARGET s"
    # -timeout: one input taking > 10 s is a hang; -rss_limit_mb bounds
    # allocations driven by hostile sizes; -detect_leaks catches leaks.
    if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ZKFARM_THREADS=2 \
      "$binary" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$OUT/crashes/$target/" \
      "$scratch" "$seeds" >"$OUT/$target.log" 2>&1; then
      status="FAIL (crash: see $OUT/$target.log, inputs in $OUT/crashes/$target/)"
      tail -n 40 "$OUT/$target.log"
    else
      grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$OUT/$target.log" | sed "s/^/[fuzz] $target /"
    fi
  fi
  if [[ $status == PASS ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  results+=("$status $target")
done

printf '[fuzz] %s\n' "${results[@]}"
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
