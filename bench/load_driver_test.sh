#!/bin/bash
# load_driver_test.sh -- the many-session coordinator at a size that fits CI:
# 200 worker sessions of bench/load_driver against a real zkfarm-coordinator
# (two verifier threads) and redis-server. load_driver --check fails unless
# every job is done, no partition was accepted from an invalid proof, every
# invalid proof was counted as a fault and the silent sessions went silent.
set -euo pipefail

driver=bench/load_driver
[[ -x $driver ]] || { echo "load_driver_test.sh: $driver not found (run under bazel test)" >&2; exit 2; }
exec "$driver" --sessions 200 --jobs 100 --partitions 4 --delay-ms 5 --verify-threads 2 \
  --invalid-share 0.02 --silent-sessions 2 --timeout-s 240 --check
