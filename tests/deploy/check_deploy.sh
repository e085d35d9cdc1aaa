#!/bin/bash
# check_deploy.sh -- static and local checks of deploy/ and monitoring/.
#
#   tests/deploy/check_deploy.sh        (tools/test.sh runs it as the suite "deploy")
#
# Each check prints PASS or FAIL with its name (and the tool's output when it
# fails); a failing check does not stop the next. The last line is
# "check_deploy: N passed, M failed"; the exit status is 0 only when none failed.
#   tools           the checkers are installed (tools/install_deps.sh puts them there)
#   metric-names    docs/METRICS.md follows Prometheus naming; every PromQL
#                   expression of alerts.yml and the dashboards uses only its
#                   names and labels; the dashboards are provisioning-ready
#   metric-names-selftest  the previous check catches a wrong name and label
#   dashboard-syntax       promtool parses every dashboard expression
#   dashboards-generated   dashboards/*.json are what dashboards.py makes
#   promtool-config        prometheus.yml (hosts), its docker-compose variant, prometheus-k8s.yml
#   promtool-rules         promtool check rules alerts.yml
#   promtool-test-rules    promtool test rules alerts_test.yml
#   alerts-tested          every alert has a firing and a not-firing test case
#   yamllint               yamllint --strict on every YAML file of deploy/ and monitoring/
#   systemd-verify         systemd-analyze verify on the units (ExecStart pointed at stubs)
#   k8s-generated          the ConfigMaps match their sources (generate_configmaps.py)
#   k8s-schema             the manifests against the Kubernetes schema (k8s_check.py)
#   compose-config         docker-compose config (the compose schema) and the farm's layout
#   redis-conf             redis-server starts with deploy/redis.conf: AOF everysec, noeviction
# Touches nothing outside a temporary directory; Redis listens on a Unix
# socket only.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
HERE=tests/deploy
# Debian's python3: python3-yaml and python3-kubernetes live there (a pyenv or
# venv python3 earlier on PATH would not see them).
PYTHON=/usr/bin/python3
TMP=$(mktemp -d "${TMPDIR:-/tmp}/zkfarm-check-deploy.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

passed=0
failed=0
failures=()

# check NAME CMD...: runs CMD with its output in a log; PASS or FAIL (+ log).
check() {
  local name=$1
  shift
  local log=$TMP/$name.log
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1))
    echo "PASS $name"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "FAIL $name"
    sed 's/^/    /' "$log"
  fi
}

check_tools() {
  local missing=()
  local tool
  for tool in systemd-analyze yamllint promtool docker-compose redis-server redis-cli; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  [[ -x $PYTHON ]] && $PYTHON -c 'import yaml, kubernetes' 2>/dev/null || missing+=("$PYTHON with yaml and kubernetes")
  if ((${#missing[@]})); then
    echo "missing: ${missing[*]} (run tools/install_deps.sh)"
    return 1
  fi
}

metric_names() {
  $PYTHON $HERE/promql_check.py "$ROOT" "$TMP/dashboard_rules.yml"
}

# A copy of the sources with one unknown metric and one unknown label must fail.
metric_names_selftest() {
  local copy=$TMP/selftest
  mkdir -p "$copy/docs" "$copy/monitoring/grafana/dashboards"
  cp docs/METRICS.md "$copy/docs/"
  cp monitoring/alerts.yml "$copy/monitoring/"
  sed 's/zkfarm_queue_depth{/zkfarm_queue_length{/; s/{priority=~/{prio=~/' \
    monitoring/grafana/dashboards/farm-overview.json >"$copy/monitoring/grafana/dashboards/farm-overview.json"
  cp monitoring/grafana/dashboards/{gpus,circuits}.json "$copy/monitoring/grafana/dashboards/"
  local output
  if output=$($PYTHON $HERE/promql_check.py "$copy" "$TMP/selftest_rules.yml" 2>&1); then
    echo "promql_check.py accepted an unknown metric and label"
    return 1
  fi
  grep -q "'zkfarm_queue_length' is not in docs/METRICS.md" <<<"$output" || { echo "$output"; return 1; }
  grep -q "has no label 'prio'" <<<"$output" || { echo "$output"; return 1; }
}

dashboard_syntax() {
  [[ -s $TMP/dashboard_rules.yml ]] || metric_names >/dev/null
  promtool check rules "$TMP/dashboard_rules.yml"
}

promtool_config() {
  promtool check config monitoring/prometheus.yml || return 1
  # docker-compose mounts the same file with deploy/compose/targets.
  mkdir -p "$TMP/compose-prometheus"
  cp monitoring/prometheus.yml monitoring/alerts.yml "$TMP/compose-prometheus/"
  cp -r deploy/compose/targets "$TMP/compose-prometheus/targets"
  promtool check config "$TMP/compose-prometheus/prometheus.yml" || return 1
  promtool check config monitoring/prometheus-k8s.yml || return 1
  # file_sd target files are checked only when they parse as target groups.
  local targets
  for targets in monitoring/targets/*.yml deploy/compose/targets/*.yml; do
    $PYTHON - "$targets" <<'EOF' || return 1
import sys, yaml
groups = yaml.safe_load(open(sys.argv[1]))
assert isinstance(groups, list) and groups, f"{sys.argv[1]}: not a list of target groups"
for g in groups:
    assert set(g) <= {"targets", "labels"} and g["targets"], f"{sys.argv[1]}: bad target group {g}"
    for t in g["targets"]:
        host, _, port = t.rpartition(":")
        assert host and port.isdigit(), f"{sys.argv[1]}: target {t} is not host:port"
EOF
  done
}

promtool_test_rules() {
  (cd monitoring && promtool test rules alerts_test.yml)
}

alerts_tested() {
  $PYTHON - <<'EOF'
import sys, yaml
alerts = {r["alert"] for g in yaml.safe_load(open("monitoring/alerts.yml"))["groups"] for r in g["rules"] if "alert" in r}
fires, quiet = set(), set()
for test in yaml.safe_load(open("monitoring/alerts_test.yml"))["tests"]:
    for case in test.get("alert_rule_test", []):
        (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
bad = [f"{a}: no case where it fires" for a in sorted(alerts - fires)]
bad += [f"{a}: no case where it stays quiet" for a in sorted(alerts - quiet)]
bad += [f"{a}: tested but not in alerts.yml" for a in sorted((fires | quiet) - alerts)]
print("\n".join(bad) or f"{len(alerts)} alerts, each tested firing and quiet")
sys.exit(1 if bad else 0)
EOF
}

run_yamllint() {
  yamllint --strict -c $HERE/yamllint.yml deploy monitoring
}

# systemd-analyze verify also checks that ExecStart's binary exists and is
# executable: a copy of the units points it at stub scripts. Any output
# (unknown keys, bad values) fails the check: systemd only warns about them.
systemd_verify() {
  local units=$TMP/systemd
  mkdir -p "$units/bin"
  local binary
  for binary in zkfarm-coordinator zkfarm-worker; do
    printf '#!/bin/sh\nexit 0\n' >"$units/bin/$binary"
    chmod +x "$units/bin/$binary"
  done
  local unit
  for unit in deploy/systemd/*.service; do
    sed "s|/usr/local/bin/|$units/bin/|g" "$unit" >"$units/$(basename "$unit")"
  done
  local output
  output=$(cd "$units" && systemd-analyze verify ./zkfarm-coordinator.service ./zkfarm-worker@0.service \
    ./zkfarm-worker@7.service 2>&1)
  local status=$?
  if ((status != 0)) || [[ -n $output ]]; then
    echo "$output"
    return 1
  fi
  # The contract of the units (docs/OPERATIONS.md).
  local worker=deploy/systemd/zkfarm-worker@.service coordinator=deploy/systemd/zkfarm-coordinator.service
  grep -q '^ExecStart=.*zkfarm-worker --device=%i ' "$worker" || { echo "$worker: --device must be %i"; return 1; }
  for unit in "$worker" "$coordinator"; do
    for line in '^Restart=on-failure$' '^EnvironmentFile=/etc/zkfarm/' '^NoNewPrivileges=yes$' \
      '^ProtectSystem=strict$' '^User=zkfarm$'; do
      grep -q "$line" "$unit" || { echo "$unit: no line matching $line"; return 1; }
    done
  done
}

k8s_generated() {
  $PYTHON deploy/k8s/generate_configmaps.py --check
}

k8s_schema() {
  $PYTHON $HERE/k8s_check.py "$ROOT"
}

# docker-compose's `config` validates against the compose schema (unknown keys,
# wrong types) and resolves anchors; the resolved file is then checked for the
# farm's layout.
compose_config() {
  local env=(ZKFARM_REDIS_PASSWORD=check GRAFANA_ADMIN_PASSWORD=check)
  env "${env[@]}" docker-compose --project-directory deploy -f deploy/docker-compose.yml config -q || return 1
  env "${env[@]}" docker-compose --project-directory deploy -f deploy/docker-compose.yml --profile cpu config \
    >"$TMP/compose.yml" || return 1
  $PYTHON - "$TMP/compose.yml" <<'EOF'
import sys, yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
problems = []
for name in ("redis", "coordinator", "prometheus", "grafana", "worker-cpu"):
    if name not in services:
        problems.append(f"no service {name}")
workers = sorted(n for n in services if n.startswith("worker-") and n != "worker-cpu")
if not workers:
    problems.append("no GPU worker services")
seen = set()
for name in workers:
    s = services[name]
    devices = s.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
    ids = [i for d in devices if "gpu" in d.get("capabilities", []) for i in d.get("device_ids", [])]
    if len(ids) != 1:
        problems.append(f"{name}: must reserve exactly one GPU, has {ids}")
    elif ids[0] in seen:
        problems.append(f"{name}: GPU {ids[0]} reserved twice")
    seen.update(ids)
    if s.get("command", [])[:3] != ["/usr/local/bin/zkfarm-worker", "--device", "0"]:
        problems.append(f"{name}: must run zkfarm-worker --device 0 (its only visible GPU)")
    if name[len("worker-"):] != (ids or ["?"])[0]:
        problems.append(f"{name}: name and GPU id differ")
targets = open("deploy/compose/targets/workers.yml").read()
for name in workers:
    if f"{name}:9470" not in targets:
        problems.append(f"{name}: not in deploy/compose/targets/workers.yml")
mounts = " ".join(str(v.get("target") if isinstance(v, dict) else v) for v in services["grafana"].get("volumes", []))
for target in ("/etc/grafana/provisioning", "/var/lib/grafana/dashboards/zkfarm"):
    if target not in mounts:
        problems.append(f"grafana: nothing mounted at {target}")
redis_command = " ".join(services["redis"].get("command", []))
if "redis.conf" not in redis_command:
    problems.append("redis: not started with deploy/redis.conf")
print("\n".join(problems) or f"{len(services)} services, {len(workers)} GPU workers")
sys.exit(1 if problems else 0)
EOF
}

# Redis with deploy/redis.conf as shipped, on a Unix socket in the temporary
# directory (port 0: no TCP listener at all).
redis_conf() {
  local dir=$TMP/redis socket=$TMP/redis/redis.sock
  mkdir -p "$dir"
  redis-server deploy/redis.conf --port 0 --unixsocket "$socket" --dir "$dir" --daemonize no \
    --logfile "$dir/redis.log" &
  local pid=$!
  local i
  for i in $(seq 50); do
    [[ -S $socket ]] && break
    sleep 0.1
  done
  local status=0 key want got
  for pair in appendonly=yes appendfsync=everysec maxmemory-policy=noeviction; do
    key=${pair%%=*} want=${pair#*=}
    got=$(redis-cli -s "$socket" config get "$key" 2>&1 | sed -n 2p)
    if [[ $got != "$want" ]]; then
      echo "$key: expected $want, got '$got'"
      status=1
    fi
  done
  got=$(redis-cli -s "$socket" config get maxmemory 2>&1 | sed -n 2p)
  if ! [[ $got =~ ^[0-9]+$ ]] || ((got == 0)); then
    echo "maxmemory: expected a limit (noeviction needs one), got '$got'"
    status=1
  fi
  redis-cli -s "$socket" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  ((status == 0)) || cat "$dir/redis.log"
  return $status
}

check tools check_tools
check metric-names metric_names
check metric-names-selftest metric_names_selftest
check dashboard-syntax dashboard_syntax
check dashboards-generated $PYTHON monitoring/grafana/dashboards.py --check
check promtool-config promtool_config
check promtool-rules promtool check rules monitoring/alerts.yml
check promtool-test-rules promtool_test_rules
check alerts-tested alerts_tested
check yamllint run_yamllint
check systemd-verify systemd_verify
check k8s-generated k8s_generated
check k8s-schema k8s_schema
check compose-config compose_config
check redis-conf redis_conf

((failed == 0)) || echo "failed: ${failures[*]}"
echo "check_deploy: $passed passed, $failed failed"
((failed == 0))
