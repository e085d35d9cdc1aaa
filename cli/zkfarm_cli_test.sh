#!/bin/bash
# zkfarm_cli_test.sh -- the `zkfarm` binary's split from zkfarm-farm
# (cli/farm_exec.h): the farm commands run through zkfarm with their own
# output and exit codes, zkfarm itself links none of their libraries, and a
# zkfarm installed without zkfarm-farm says so (exit 2) for a farm command
# while its local commands still work. And `zkfarm prove`'s outputs: a
# proof writes exactly proof.json and public.json (and it verifies), a
# witness that fails the self-check writes nothing: the files already there
# stay as they were and no temp file is left (public.json is written while
# the proof runs, so this is what keeps a bad witness from leaving it).
#
# usage: zkfarm_cli_test.sh ZKFARM ZKFARM_FARM   (bazel test //cli:zkfarm_cli_test)
set -uo pipefail
ZKFARM=$1
ZKFARM_FARM=$2
WORK=$(mktemp -d "${TEST_TMPDIR:-/tmp}/zkfarm_cli_test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect NAME STATUS PATTERN CMD...: CMD exits STATUS and its stdout+stderr match PATTERN (grep -E).
expect() {
  local name=$1 status=$2 pattern=$3; shift 3
  "$@" >"$WORK/out" 2>&1
  local got=$?
  [ "$got" -eq "$status" ] || { fail "$name: exit $got, expected $status"; sed 's/^/  | /' "$WORK/out" >&2; return; }
  grep -Eq -- "$pattern" "$WORK/out" || { fail "$name: output does not match /$pattern/"; sed 's/^/  | /' "$WORK/out" >&2; return; }
  echo "ok: $name"
}

expect "usage lists local and farm commands" 0 "farm commands" "$ZKFARM" --help
for command in circuit submit status wait result workers cancel tenant keygen prove verify setup; do
  grep -Eq "^  $command " "$WORK/out" || fail "zkfarm --help does not list $command"
done
expect "no arguments: usage, exit 2" 2 "usage: zkfarm COMMAND" "$ZKFARM"
expect "unknown command: exit 2" 2 "unknown command 'frobnicate'" "$ZKFARM" frobnicate
expect "farm command help through zkfarm-farm" 0 "--timeout" "$ZKFARM" wait --help
expect "local command help" 0 "proof.json" "$ZKFARM" prove --help
expect "keygen through zkfarm-farm" 0 "^public .+" "$ZKFARM" keygen
grep -Eq "^secret .+" "$WORK/out" || fail "keygen printed no secret key"
expect "keygen --out writes the pair" 0 "." "$ZKFARM" keygen --out "$WORK/k"
{ [ -s "$WORK/k.public" ] && [ -s "$WORK/k.secret" ]; } || fail "keygen --out wrote no key files"
expect "keygen refuses to overwrite: exit 2" 2 "exists" "$ZKFARM" keygen --out "$WORK/k"
expect "farm usage error: exit 2" 2 "." "$ZKFARM" status
expect "Redis unreachable: exit 2" 2 "Redis" "$ZKFARM" status 00000000-0000-0000-0000-000000000000 --redis redis://127.0.0.1:1
expect "zkfarm-farm called directly" 0 "^public " "$ZKFARM_FARM" keygen
expect "zkfarm-farm: unknown command, exit 2" 2 "unknown command 'prove'" "$ZKFARM_FARM" prove

# zkfarm links none of the farm commands' libraries (the point of the split).
if command -v ldd >/dev/null; then
  ldd "$ZKFARM" >"$WORK/ldd" 2>&1 || fail "ldd $ZKFARM failed"
  if grep -Ei "libzmq|libhiredis|libcurl|libcapnp|libkj|libprometheus" "$WORK/ldd"; then
    fail "zkfarm links a farm command's library (above)"
  fi
  ldd "$ZKFARM_FARM" >"$WORK/ldd_farm" 2>&1 || fail "ldd $ZKFARM_FARM failed"
  grep -q libzmq "$WORK/ldd_farm" || fail "zkfarm-farm does not link libzmq: is it the farm binary?"
  # Nor does zkfarm-farm link libcurl: only the daemons read witnesses and
  # artifacts over HTTP (cluster/witness_access.h), and libcurl's 22
  # libraries doubled its start (5.3 -> 2.9 ms a process without them).
  if grep -i libcurl "$WORK/ldd_farm"; then
    fail "zkfarm-farm links libcurl (above): a farm command pulled in cluster/witness_access or http_fetch"
  fi
fi

# A zkfarm copied without zkfarm-farm: local commands work, farm commands say what is missing.
mkdir -p "$WORK/alone"
cp "$(readlink -f "$ZKFARM")" "$WORK/alone/zkfarm"
expect "alone: local command works" 0 "proof.json" "$WORK/alone/zkfarm" prove --help
expect "alone: farm command names zkfarm-farm, exit 2" 2 "zkfarm-farm.*could not be started" "$WORK/alone/zkfarm" keygen
# ... and one copied beside it again runs it.
cp "$(readlink -f "$ZKFARM_FARM")" "$WORK/alone/zkfarm-farm"
expect "installed pair: farm command runs" 0 "^public " "$WORK/alone/zkfarm" keygen
# A symbolic link to zkfarm elsewhere finds zkfarm-farm beside the real file.
mkdir -p "$WORK/links"
ln -s "$WORK/alone/zkfarm" "$WORK/links/zkfarm"
expect "symlinked zkfarm: farm command runs" 0 "^public " "$WORK/links/zkfarm" keygen

# prove: outputs only for a proof that passes the self-check.
P=$WORK/prove
mkdir -p "$P/out"
# names DIR: the names in DIR, sorted, each followed by a space.
names() { find "$1" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' '; }
expect "prove: synthetic circuit" 0 "64 constraints" \
  "$ZKFARM" gen-circuit --curve bn254 --constraints 64 --public 2 --r1cs "$P/c.r1cs" --wtns "$P/w.wtns"
expect "prove: test key" 0 "TEST-ONLY" "$ZKFARM" setup "$P/c.r1cs" "$P/c.zkey" --seed 3
expect "prove: proves" 0 "proving on the CPU" "$ZKFARM" prove --cpu "$P/c.zkey" "$P/w.wtns" "$P/out/proof.json" "$P/out/public.json"
[ "$(names "$P/out")" = "proof.json public.json " ] || fail "prove: out/ holds $(names "$P/out")"
"$ZKFARM" export-vk "$P/c.zkey" "$P/vk.json" || fail "prove: export-vk exit $?"
expect "prove: the proof verifies" 0 "" "$ZKFARM" verify "$P/vk.json" "$P/out/public.json" "$P/out/proof.json"
# The first private signal (after w[0] and the 2 public ones) set to 7: the
# .r1cs names constraint 0 as unsatisfied; without it the self-check fails.
cp "$P/w.wtns" "$P/bad.wtns"
wires=107 size=$(stat -c %s "$P/bad.wtns")
{ printf '\x07'; head -c 31 /dev/zero; } | dd of="$P/bad.wtns" bs=1 seek=$((size - (wires - 3) * 32)) conv=notrunc status=none
cp "$P/out/proof.json" "$P/proof.before"
cp "$P/out/public.json" "$P/public.before"
expect "prove: bad witness, --r1cs names the constraint" 2 "does not satisfy constraint 0" \
  "$ZKFARM" prove --cpu --r1cs "$P/c.r1cs" "$P/c.zkey" "$P/bad.wtns" "$P/out/proof.json" "$P/out/public.json"
expect "prove: bad witness, the self-check fails" 2 "failed verification" \
  "$ZKFARM" prove --cpu "$P/c.zkey" "$P/bad.wtns" "$P/out/proof.json" "$P/out/public.json"
[ "$(names "$P/out")" = "proof.json public.json " ] || fail "prove: bad witness left $(names "$P/out")"
cmp -s "$P/out/proof.json" "$P/proof.before" || fail "prove: bad witness changed proof.json"
cmp -s "$P/out/public.json" "$P/public.before" || fail "prove: bad witness changed public.json"
# A bad witness into a fresh directory: nothing at all.
mkdir -p "$P/fresh"
expect "prove: bad witness, fresh directory" 2 "failed verification" \
  "$ZKFARM" prove --cpu "$P/c.zkey" "$P/bad.wtns" "$P/fresh/proof.json" "$P/fresh/public.json"
[ -z "$(names "$P/fresh")" ] || fail "prove: bad witness wrote $(names "$P/fresh")"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "all passed"
