# farm_bench_lib.sh -- what the farm benchmark scripts (inputs_bench.sh,
# partition_stream.sh) share; sourced, not run.
#
#   bench_work NAME   makes $WORK (a temp dir), starts the pid list $pids
#                     and installs the EXIT trap that kills every pid in
#                     it and removes $WORK unless $keep is 1
#   now, since T      the clock, and seconds since T (two decimals)
#   free_port P       the first port from P up that nothing listens on
#   bench_redis LOG [ARGS...]  a throwaway redis-server on a free port from
#                     36379 (no persistence; ARGS added), its output in LOG;
#                     returns once it answers, with $redis_port and
#                     $redis_pid set and the pid in $pids
#   scrape PORT       the page at http://127.0.0.1:PORT/metrics
#   pick NAME [LABEL] from a page on stdin, the sum of NAME's samples (a
#                     counter, or a histogram's _sum / _count), those whose
#                     labels hold LABEL (e.g. 'stage="parse_witness"') when
#                     given: page=$(scrape P); pick NAME <<<"$page"
# Sourced by bash scripts, so it has no shebang; this tells shellcheck the dialect.
# shellcheck shell=bash

bench_work() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  pids=()
  trap bench_cleanup EXIT
}
bench_cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ((${keep:-0})) || rm -rf "$WORK"
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
free_port() {
  local port=$1
  while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
  echo "$port"
}
bench_redis() {
  local log=$1
  shift
  redis_port=$(free_port 36379)
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no "$@" >"$log" 2>&1 &
  redis_pid=$!
  pids+=("$redis_pid")
  for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "redis-server did not answer on port $redis_port (log: $log)" >&2
  return 1
}
scrape() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1"; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3)
}
pick() {
  awk -v m="$1" -v l="${2:-}" '($1 == m || index($1, m "{") == 1) && (l == "" || index($1, l) > 0) { s += $2 }
    END { printf "%.6f", s + 0 }'
}
