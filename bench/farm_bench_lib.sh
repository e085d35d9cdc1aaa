# farm_bench_lib.sh -- what the farm benchmark scripts (inputs_bench.sh,
# partition_stream.sh) share; sourced, not run.
#
#   bench_work NAME   makes $WORK (a temp dir), starts the pid list $pids
#                     and installs the EXIT trap that kills every pid in
#                     it and removes $WORK unless $keep is 1
#   now, since T      the clock, and seconds since T (two decimals)
#   free_port P       the first port from P up that nothing listens on
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
scrape() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1"; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3)
}
pick() {
  awk -v m="$1" -v l="${2:-}" '($1 == m || index($1, m "{") == 1) && (l == "" || index($1, l) > 0) { s += $2 }
    END { printf "%.6f", s + 0 }'
}
