#!/usr/bin/env bash
# run_fuzz.sh -- builds the libFuzzer targets with clang (libFuzzer +
# AddressSanitizer + UndefinedBehaviorSanitizer) and runs each one for
# FUZZ_SECONDS seconds from its seed corpus. Fails if any target crashes,
# leaks, trips a sanitizer, times out on one input, or fails to build.
#
#   tests/fuzz/run_fuzz.sh                # all targets, 15 s each (CI)
#   FUZZ_SECONDS=60 tests/fuzz/run_fuzz.sh zkey_fuzz pce_fuzz
#   tests/fuzz/run_fuzz.sh --long 600     # manual: each target 600 s, niced,
#                                         # two at a time (not run by CI)
#
# Targets (<dir>/<target>.cc):
#   formats/  r1cs_fuzz wtns_fuzz zkey_fuzz pce_fuzz snarkjs_json_fuzz
#   schema/   job_fuzz       the job JSON a client pushes onto a queue
#   schema/   messages_fuzz  a ZeroMQ frame as the coordinator or a worker gets it
# Seeds: tests/fuzz/corpus/<target>/ (checked in), with a libFuzzer dictionary
# in tests/fuzz/<target>.dict where there is one (checked in; `--refresh-seeds` rebuilds
# the formats/ ones from formats/testdata, which needs g++). New inputs found
# while fuzzing go to a scratch corpus, not into the repo; a crashing input is
# kept under $FUZZ_OUT (default: a temp dir, printed). An input that once
# crashed a target is checked in as a seed, so every run replays it.
#
# --long SECONDS runs each target that long under `nice -n 19`, at most
# FUZZ_PARALLEL (default 2) targets at a time, and prints per target the
# executions, coverage (libFuzzer's "cov" edges) and crashes found; the same
# summary goes to $FUZZ_OUT/summary.txt.
#
# Environment: FUZZ_SECONDS (default 15), FUZZ_CXX (default clang++-14 or
# clang++), FUZZ_OUT (where builds, scratch corpora and crash inputs go),
# FUZZ_PARALLEL (targets run at once with --long; default 2).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECONDS_PER_TARGET=${FUZZ_SECONDS:-15}
CXX=${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++)}
OUT=${FUZZ_OUT:-$(mktemp -d /tmp/zkfarm-fuzz.XXXXXX)}
mkdir -p "$OUT"
CORPUS=$ROOT/tests/fuzz/corpus
ALL_TARGETS=(r1cs_fuzz wtns_fuzz zkey_fuzz pce_fuzz snarkjs_json_fuzz job_fuzz messages_fuzz)
PARALLEL=${FUZZ_PARALLEL:-2}
LONG=0

# Where each target's source lives, the library sources it links (paths
# without .cc; gen/ is the Cap'n Proto code generated under $OUT) and the
# system libraries it needs.
declare -A TARGET_DIR=(
  [r1cs_fuzz]=formats [wtns_fuzz]=formats [zkey_fuzz]=formats [pce_fuzz]=formats
  [snarkjs_json_fuzz]=formats [job_fuzz]=schema [messages_fuzz]=schema
)
declare -A SOURCES=(
  [r1cs_fuzz]="base/files formats/binfile formats/r1cs"
  [wtns_fuzz]="base/files formats/binfile formats/wtns"
  [zkey_fuzz]="base/files base/hex base/digest formats/binfile formats/r1cs formats/zkey formats/pce kernels/spmv"
  [pce_fuzz]="base/files base/hex base/digest formats/binfile formats/r1cs formats/pce kernels/spmv"
  [snarkjs_json_fuzz]="base/files formats/binfile formats/snarkjs_json kernels/curves"
  [job_fuzz]="base/redact schema/job"
  [messages_fuzz]="gen/schema/zkfarm.capnp schema/messages"
)
declare -A LIBS=(
  [messages_fuzz]="-lcapnp -lkj"
)

log() { echo "[fuzz] $*"; }

refresh_seeds() {
  local td=$ROOT/formats/testdata tool=$OUT/formats_interop
  log "building formats_interop to make PCE seeds"
  g++ -std=c++20 -O1 -I"$ROOT" "$ROOT/formats/formats_interop.cc" "$ROOT"/formats/{binfile,r1cs,wtns,zkey,pce,snarkjs_json}.cc \
    "$ROOT"/base/{files,hex,digest}.cc "$ROOT"/kernels/spmv.cc -lcrypto -lpthread -o "$tool"
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
while [[ $# -gt 0 ]]; do
  case $1 in
    --refresh-seeds) refresh_seeds ;;
    --long)
      [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "[fuzz] --long takes a number of seconds" >&2; exit 2; }
      LONG=1
      SECONDS_PER_TARGET=$2
      shift
      ;;
    -*) echo "[fuzz] unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${ALL_TARGETS[@]}")

[[ -x $CXX ]] || { echo "[fuzz] no clang++ found (set FUZZ_CXX)" >&2; exit 2; }
log "compiler $CXX, $SECONDS_PER_TARGET s per target, output in $OUT"
mkdir -p "$OUT/obj"

SAN=('-fsanitize=address,undefined' -fno-sanitize-recover=all -fno-omit-frame-pointer)
# kernels/ computes tower constants at compile time: more than clang's default
# constexpr step budget.
FLAGS=(-std=c++20 -O1 -g -I"$ROOT" -fconstexpr-steps=200000000)

# Cap'n Proto code for schema/zkfarm.capnp, generated the way schema/BUILD
# does (Debian's compiler, so it matches the installed headers).
generate_capnp() {
  local gen=$OUT/gen/schema
  if [[ ! -f $gen/zkfarm.capnp.c++ || $ROOT/schema/zkfarm.capnp -nt $gen/zkfarm.capnp.c++ ]]; then
    log "capnp compile schema/zkfarm.capnp"
    mkdir -p "$gen"
    capnp compile -I/usr/include --src-prefix="$ROOT/schema" -oc++:"$gen" "$ROOT/schema/zkfarm.capnp" || return 1
  fi
}

# compile_object PATH: PATH.cc (under the repo, or gen/ under $OUT) to an
# object under $OUT/obj. Objects are shared between targets and compiled one
# at a time (2-core machines).
compile_object() {
  local name=$1 obj=$OUT/obj/$1.o src=$ROOT/$1.cc
  case $name in
    gen/*)
      generate_capnp || return 1
      src=$OUT/$name.c++
      ;;
  esac
  mkdir -p "$(dirname "$obj")"
  # Rebuild when the source or any header of the packages involved is newer.
  if [[ ! -f $obj || $src -nt $obj ]] ||
    [[ -n $(find "$ROOT/formats" "$ROOT/kernels" "$ROOT/cluster" "$ROOT/schema" -maxdepth 1 -name '*.h' \
      -newer "$obj" -print -quit) ]]; then
    log "compile $name"
    "$CXX" "${FLAGS[@]}" -I"$OUT/gen" "${SAN[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
  fi
}

# build_target TARGET: compiles and links $OUT/TARGET; fails on a build error.
build_target() {
  local target=$1 objs=() src
  for src in ${SOURCES[$target]}; do
    compile_object "$src" || return 1
    objs+=("$OUT/obj/$src.o")
  done
  log "link $target"
  # shellcheck disable=SC2086  # LIBS entries are word lists
  "$CXX" "${FLAGS[@]}" -I"$OUT/gen" "${SAN[@]}" -fsanitize=fuzzer "$ROOT/${TARGET_DIR[$target]}/$target.cc" \
    "${objs[@]}" ${LIBS[$target]:-} -lcrypto -lpthread -o "$OUT/$target"
}

# run_target TARGET: fuzzes $OUT/TARGET for SECONDS_PER_TARGET seconds and
# writes one summary line to $OUT/TARGET.summary; exit status 0 when nothing
# was found. The short (CI) run stops at the first crash; the long run forks
# a child per batch and keeps going after a crash (-ignore_crashes), so one
# bug does not end the run, and every crashing input is kept.
run_target() {
  local target=$1 seeds=$CORPUS/$1 scratch=$OUT/corpus/$1 log=$OUT/$1.log status
  mkdir -p "$scratch" "$OUT/crashes/$target"
  # Crash inputs of earlier runs into the same FUZZ_OUT are kept but not counted.
  local started_marker=$OUT/$target.started
  : >"$started_marker"
  [[ -d $seeds ]] || { log "no seeds in $seeds (run with --refresh-seeds)"; mkdir -p "$seeds"; }
  local mode=() nice=() dict=()
  [[ -f $ROOT/tests/fuzz/$target.dict ]] && dict=(-dict="$ROOT/tests/fuzz/$target.dict")
  ((LONG)) && mode=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1) && nice=(nice -n 19)
  # -timeout: one input taking > 10 s is a hang; -rss_limit_mb bounds
  # allocations driven by hostile sizes; -detect_leaks catches leaks.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ZKFARM_THREADS=2 \
    "${nice[@]}" "$OUT/$target" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$OUT/crashes/$target/" "${mode[@]}" "${dict[@]}" \
    "$scratch" "$seeds" >"$log" 2>&1 && status=0 || status=$?
  # Executions and coverage: the final stats (single process) or the last
  # status line "#EXECS: cov: EDGES ..." (both modes print those).
  local execs cov line
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  line=$(grep -E '^#[0-9]+.*cov: [0-9]+' "$log" | tail -n 1 || true)
  [[ -n $execs ]] || execs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$line")
  cov=$(sed -E 's/.*cov: ([0-9]+).*/\1/' <<<"$line")
  local crashes
  crashes=$(find "$OUT/crashes/$target" -type f -newer "$started_marker" | wc -l)
  echo "$target: ${SECONDS_PER_TARGET} s, ${execs:-?} executions, cov ${cov:-?} edges, $crashes crashing inputs (exit $status)" \
    >"$OUT/$target.summary"
  ((status == 0 && crashes == 0))
}

passed=0
failed=0
results=()
built=()
for target in "${targets[@]}"; do
  [[ -n ${SOURCES[$target]:-} ]] || { echo "[fuzz] unknown target $target" >&2; exit 2; }
done
for target in "${targets[@]}"; do
  if build_target "$target"; then
    built+=("$target")
  else
    failed=$((failed + 1))
    results+=("FAIL (build) $target")
  fi
done

# record TARGET STATUS: adds a finished run to the results.
record() {
  sed 's/^/[fuzz] /' "$OUT/$1.summary"
  if [[ $2 == 0 ]]; then
    passed=$((passed + 1))
    results+=("PASS $1")
  else
    failed=$((failed + 1))
    results+=("FAIL (crash: see $OUT/$1.log, inputs in $OUT/crashes/$1/) $1")
    ((LONG)) || tail -n 40 "$OUT/$1.log"
  fi
}

if ((LONG)); then
  # Niced, FUZZ_PARALLEL at a time: the machine is shared.
  declare -A running=()  # pid -> target
  reap() {
    local pid status
    wait -n -p pid && status=0 || status=$?
    record "${running[$pid]}" "$status"
    unset "running[$pid]"
  }
  for target in "${built[@]}"; do
    while ((${#running[@]} >= PARALLEL)); do reap; done
    log "run $target for $SECONDS_PER_TARGET s (nice -n 19, $PARALLEL at a time)"
    run_target "$target" &
    running[$!]=$target
  done
  while ((${#running[@]} > 0)); do reap; done
else
  for target in "${built[@]}"; do
    log "run $target for $SECONDS_PER_TARGET s"
    run_target "$target" && status=0 || status=$?
    record "$target" "$status"
  done
fi

printf '[fuzz] %s\n' "${results[@]}" | tee "$OUT/summary.txt"
cat "$OUT"/*.summary >>"$OUT/summary.txt" 2>/dev/null
echo "fuzz: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
