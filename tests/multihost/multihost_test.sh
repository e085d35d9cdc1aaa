#!/bin/bash
# multihost_test.sh -- a farm across three hosts made of network namespaces,
# with nothing shared but the network.
#
#   host A (netns): Redis, coordinators c1 and c2 (leases on), an HTTP server
#                   (python3 -m http.server) serving the artifact store and
#                   the witnesses
#   hosts B and C:  one CPU worker each, attached to both coordinators,
#                   --artifacts http://A/artifacts/, a private --cache-dir;
#                   each runs in its own mount namespace where A's directory
#                   is hidden under an empty tmpfs, so circuits and witnesses
#                   reach it only over HTTP
#
# A stream of jobs on both curves (witnesses as http:// URLs with sha256 and
# size, `zkfarm submit --witness-url-base`); c2 is kill -9'd once both
# workers have proved for it. Checks: every job done, each partition stored
# once, every proof verified (`zkfarm verify`), and the workers that served
# c2 proving for c1 afterwards without a restart. Prints the time from the
# kill until each worker's next task from c1 and until c2's jobs resume.
#
# Everything (namespaces, veth pairs, processes, files) is removed on exit,
# also on failure. Needs root and `ip netns`; where they are not allowed the
# test prints "SKIPPED: <reason>" and exits 77 (tools/test.sh counts SKIP).
#
#   tests/multihost/multihost_test.sh        (builds what it needs with bazel)
#   ZKFARM_MULTIHOST_KEEP=1 ...              keep the logs (printed path)
#   ZKFARM_BIN_DIR=DIR ...                   use DIR/{coordinator,worker,cli}/ binaries
set -uo pipefail

SKIPPED=77
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1

skip() {
  echo "SKIPPED: $*"
  exit "$SKIPPED"
}
fail() {
  echo "FAIL: $*"
  for f in "$WORK"/a/*.log "$WORK"/b/*.log "$WORK"/c/*.log; do
    [[ -f $f ]] && { echo "---- $f (last 40 lines)"; tail -40 "$f"; }
  done
  exit 1
}

((EUID == 0)) || skip "needs root to make network namespaces"
command -v ip >/dev/null || skip "no ip(8) (iproute2)"
command -v unshare >/dev/null || skip "no unshare(1)"
PYTHON=/usr/bin/python3
[[ -x $PYTHON ]] || skip "no $PYTHON (Debian's python3) for the HTTP server"
TAG=zk$$
NS_A=${TAG}a NS_B=${TAG}b NS_C=${TAG}c
ip netns add "$NS_A" 2>/dev/null || skip "ip netns add is not allowed here"
ip netns del "$NS_A"

if [[ -n ${ZKFARM_BIN_DIR:-} ]]; then
  BIN=$ZKFARM_BIN_DIR  # holds coordinator/, worker/ and cli/ binaries as bazel-bin does
else
  echo "==== building"
  read -r -a BAZEL_FLAGS <<<"${ZKFARM_BAZEL_FLAGS:-}"
  bazel build "${BAZEL_FLAGS[@]}" //coordinator:zkfarm-coordinator //worker:zkfarm-worker //cli:zkfarm ||
    fail "bazel build"
  BIN=$(bazel info "${BAZEL_FLAGS[@]}" bazel-bin 2>/dev/null)
fi
WORK=$(mktemp -d /tmp/zkfarm-multihost.XXXXXX)
mkdir -p "$WORK"/{bin,a/www/artifacts,a/www/witnesses,a/redis,b/cache,c/cache,out}
# Private copies: the workers must not read anything under bazel's tree
# either (it is on the same file system as A).
cp "$BIN/coordinator/zkfarm-coordinator" "$BIN/worker/zkfarm-worker" "$BIN/cli/zkfarm" "$BIN/cli/zkfarm-farm" "$WORK/bin/"

PIDS=()
declare -A PID=()  # start's processes by NAME (c2, worker-b, ...)
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  for ns in "$NS_A" "$NS_B" "$NS_C"; do ip netns del "$ns" 2>/dev/null; done
  ip link del "${TAG}ab" 2>/dev/null
  ip link del "${TAG}ac" 2>/dev/null
  if [[ ${ZKFARM_MULTIHOST_KEEP:-0} == 1 ]]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "==== network: A-B 10.77.1.0/30, A-C 10.77.2.0/30"
for ns in "$NS_A" "$NS_B" "$NS_C"; do
  ip netns add "$ns" || fail "ip netns add $ns"
  ip -n "$ns" link set lo up
done
A_B=10.77.1.1 B=10.77.1.2 A_C=10.77.2.1 C=10.77.2.2
ip link add "${TAG}ab" netns "$NS_A" type veth peer name eth0 netns "$NS_B" || fail "veth A-B"
ip link add "${TAG}ac" netns "$NS_A" type veth peer name eth0 netns "$NS_C" || fail "veth A-C"
ip -n "$NS_A" addr add "$A_B/30" dev "${TAG}ab" && ip -n "$NS_A" link set "${TAG}ab" up
ip -n "$NS_A" addr add "$A_C/30" dev "${TAG}ac" && ip -n "$NS_A" link set "${TAG}ac" up
ip -n "$NS_B" addr add "$B/30" dev eth0 && ip -n "$NS_B" link set eth0 up
ip -n "$NS_C" addr add "$C/30" dev eth0 && ip -n "$NS_C" link set eth0 up

in_a() { ip netns exec "$NS_A" "$@"; }
# start NAME NS CMD...: a background process in NS, logging to $WORK/<host>/NAME.log.
start() {
  local name=$1 dir=$2 ns=$3
  shift 3
  ip netns exec "$ns" "$@" >"$WORK/$dir/$name.log" 2>&1 &
  PIDS+=($!)
  PID[$name]=$!
}

echo "==== host A: Redis, HTTP, two coordinators"
start redis a "$NS_A" redis-server --port 6379 --bind 0.0.0.0 --protected-mode no --save "" --appendonly no \
  --dir "$WORK/a/redis"
start http a "$NS_A" "$PYTHON" -m http.server 8080 --bind 0.0.0.0 --directory "$WORK/a/www"
REDIS=redis://$A_B:6379
for _ in $(seq 100); do in_a redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.1; done
in_a redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 || fail "redis did not start"

ZK=("$WORK/bin/zkfarm")
for curve in bn128 bls12381; do
  id=$(in_a "${ZK[@]}" circuit add "formats/testdata/${curve}_mul.zkey" --redis "$REDIS" \
    --artifacts "$WORK/a/www/artifacts") || fail "circuit add $curve"
  eval "CIRCUIT_$curve=$id"
  cp "formats/testdata/${curve}_mul.wtns" "$WORK/a/www/witnesses/${curve}.wtns"
done
COORD_FLAGS=(--redis "$REDIS" --artifacts "$WORK/a/www/artifacts" --witness-root "$WORK/a/www/witnesses"
  --takeover-after-ms 3000 --heartbeat-ms 500 --dead-after-ms 2000 --intake-poll-ms 50 --max-active-jobs 4
  --metrics-listen 127.0.0.1:0 --witness-url-allow "http://$A_B:8080/witnesses/")
start c1 a "$NS_A" "$WORK/bin/zkfarm-coordinator" --id c1 --listen tcp://0.0.0.0:5555 "${COORD_FLAGS[@]}"
start c2 a "$NS_A" "$WORK/bin/zkfarm-coordinator" --id c2 --listen tcp://0.0.0.0:5556 "${COORD_FLAGS[@]}"

echo "==== hosts B and C: workers over HTTP only"
for host in b c; do
  if [[ $host == b ]]; then ns=$NS_B addr=$A_B; else ns=$NS_C addr=$A_C; fi
  # A's directory is an empty tmpfs in the worker's mount namespace.
  start "worker-$host" "$host" "$ns" unshare --mount --propagation private sh -c \
    "mount -t tmpfs none '$WORK/a' && exec \"\$@\"" worker "$WORK/bin/zkfarm-worker" --cpu --id "host-$host/cpu" \
    --coordinator "tcp://$addr:5555" --coordinator "tcp://$addr:5556" --artifacts "http://$addr:8080/artifacts/" \
    --cache-dir "$WORK/$host/cache" --redis "redis://$addr:6379" --prove-delay-ms 300 --metrics-listen 127.0.0.1:0 \
    --witness-url-allow "http://$A_B:8080/witnesses/"
done

echo "==== a stream of jobs"
JOBS=()
submit() {  # submit ID CURVE: two partitions, witnesses as URLs with sha256 and size
  local circuit
  eval "circuit=\$CIRCUIT_$2"
  in_a "${ZK[@]}" submit "$circuit" "$WORK/a/www/witnesses/$2.wtns" "$WORK/a/www/witnesses/$2.wtns" --id "$1" \
    --witness-url-base "http://$A_B:8080/witnesses/" --redis "$REDIS" >/dev/null || fail "submit $1"
  JOBS+=("$1")
}
for i in $(seq 0 7); do submit "mh-$i" "$( ((i % 2 == 0)) && echo bn128 || echo bls12381)"; done
# Wait until both workers have proved for c2, then kill it.
deadline=$((SECONDS + 120))
until grep -q "from coordinator c2" "$WORK/b/worker-b.log" && grep -q "from coordinator c2" "$WORK/c/worker-c.log"; do
  ((SECONDS < deadline)) || fail "the workers never got a task from c2"
  sleep 0.1
done
kill -9 "${PID[c2]}"
KILLED_AT=$(date +%s.%N)
wait "${PID[c2]}" 2>/dev/null
echo "c2 killed at $(date -u -d "@$KILLED_AT" +%H:%M:%S.%3N)"
for i in $(seq 8 15); do submit "mh-$i" "$( ((i % 2 == 0)) && echo bn128 || echo bls12381)"; done

echo "==== every job done once, every proof verified"
for id in "${JOBS[@]}"; do
  in_a "${ZK[@]}" wait "$id" --timeout 240 --quiet --redis "$REDIS" >"$WORK/out/$id.status" ||
    fail "job $id: $(cat "$WORK/out/$id.status")"
  grep -q '"state":"done"' "$WORK/out/$id.status" || fail "job $id not done: $(cat "$WORK/out/$id.status")"
  proved=$(in_a redis-cli -h 127.0.0.1 lrange "zkfarm:job:$id:events" 0 -1 | grep -c '"partition_proved"')
  ((proved == 2)) || fail "job $id: $proved partition_proved events, expected 2"
  in_a "${ZK[@]}" result "$id" --out "$WORK/out/$id" --redis "$REDIS" >/dev/null 2>"$WORK/out/$id.err" ||
    fail "result $id: $(cat "$WORK/out/$id.err")"
  circuit=$(grep -o '"circuit":"[0-9a-f]*"' "$WORK/out/$id.status" | cut -d'"' -f4)
  for p in 0 1; do
    "${ZK[@]}" verify "$WORK/a/www/artifacts/$circuit/vk.json" "$WORK/out/$id/public_$p.json" \
      "$WORK/out/$id/proof_$p.json" >/dev/null || fail "job $id partition $p: proof does not verify"
  done
done
[[ $(in_a redis-cli -h 127.0.0.1 llen zkfarm:processing:c2) == 0 ]] || fail "c2's processing list was not taken over"
grep -q "jobs of coordinator c2 (lease expired)" "$WORK/a/c1.log" || fail "c1 did not take c2's jobs over"

echo "==== the workers that served c2 went on proving for c1"
# "2026-12-01T17:40:01.123Z ..." -> seconds since the epoch.
stamp() { date -u -d "$(cut -c1-23 <<<"$1" | tr T ' ')" +%s.%N; }
since_kill() { awk -v t="$1" -v k="$KILLED_AT" 'BEGIN { printf "%.3f", t - k }'; }
for host in b c; do
  log=$WORK/$host/worker-$host.log
  kill -0 "${PID[worker-$host]}" 2>/dev/null || fail "worker $host exited"
  first=""
  while IFS= read -r line; do
    t=$(stamp "$line")
    if awk -v t="$t" -v k="$KILLED_AT" 'BEGIN { exit !(t > k) }'; then first=$t; break; fi
  done < <(grep "from coordinator c1" "$log")
  [[ -n $first ]] || fail "worker $host got no task from c1 after c2 died"
  printf 'worker %s: next task from c1 %.3f s after the kill\n' "$host" "$(since_kill "$first")"
  grep -q "from coordinator c2" "$log" || fail "worker $host never served c2"
done
takeover=$(grep -m1 "jobs of coordinator c2 (lease expired)" "$WORK/a/c1.log")
printf 'c1 took c2'"'"'s jobs over %.3f s after the kill (lease 3 s)\n' "$(since_kill "$(stamp "$takeover")")"
echo "PASSED: ${#JOBS[@]} jobs on two curves across 3 namespaces, coordinator c2 killed mid-run"
