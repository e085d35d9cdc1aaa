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
#   redis-conf             redis-server starts with deploy/redis.conf: AOF everysec, noeviction,
#                          hz 100
#   redis-acl              the compose and k8s Redis commands, run here with a real
#                          redis-server, load deploy/users.acl onto the data volume;
#                          the coordinator logs in as zkfarm-admin, the workers as
#                          zkfarm-worker; tenants' users are saved (redis_acl_check.py)
#   coordinators-listed    every worker of compose and k8s lists every coordinator
#                          those files run (ZKFARM_COORDINATOR, ',' between
#                          them), each as tcp://HOST:PORT (coordinators_check.py)
#   coordinators-listed-selftest  the previous check catches a second
#                          coordinator the workers do not list, and passes
#                          once they list both
#   image-libraries        the image's runtime stage (deploy/docker/Dockerfile)
#                          installs the Debian package of every shared library
#                          the five binaries it ships load (ldd, dpkg -S, the
#                          packages' dependencies: image_libs_check.py)
#   image-libraries-selftest  the previous check catches the runtime stage
#                          without libcurl4
#   reaping-init           the image's PID 1 is tini (it reaps orphans) and no
#                          compose service or k8s container replaces it
#                          (no `entrypoint:`, no `command:`)
#   secure-defaults        every shipped coordinator listens on loopback or has
#                          CURVE on, and the workers beside it have their keys
#   systemd-farm           deploy/redis.conf with deploy/systemd/*.env: a real
#                          redis-server, coordinator and worker with the
#                          shipped settings (the password is required, the
#                          coordinator logs in and runs a job's transitions,
#                          the worker is admitted over CURVE)
#   acl-farm        the per-role ACL users deploy/redis.conf documents, as
#                   written there: a real redis-server with those lines, a
#                   coordinator, a CPU worker reading its artifacts from an
#                   HTTP store and the CLI each log in as their own user and
#                   prove a job end to end (an HTTP and a redis:// witness);
#                   the worker user cannot write
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
# The variables docker-compose.yml requires (deploy/compose/env.example).
COMPOSE_ENV=(ZKFARM_REDIS_PASSWORD=check ZKFARM_REDIS_ADMIN_PASSWORD=check-admin
  ZKFARM_REDIS_WORKER_PASSWORD=check-worker GRAFANA_ADMIN_PASSWORD=check)

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
  # A coordinator that lost its lease exits 3 (coordinator/constants.h,
  # kExitLeaseLost): the unit must restart it.
  if grep '^RestartPreventExitStatus=' "$coordinator" | grep -qw 3; then
    echo "$coordinator: RestartPreventExitStatus must not hold 3 (lease lost: restart)"
    return 1
  fi
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
  local env=("${COMPOSE_ENV[@]}")
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
  local status=0 key want got password
  password=$(sed -n 's/^requirepass //p' deploy/redis.conf)
  for pair in appendonly=yes appendfsync=everysec maxmemory-policy=noeviction hz=100; do
    key=${pair%%=*} want=${pair#*=}
    got=$(redis-cli -s "$socket" --no-auth-warning -a "$password" config get "$key" 2>&1 | sed -n 2p)
    if [[ $got != "$want" ]]; then
      echo "$key: expected $want, got '$got'"
      status=1
    fi
  done
  got=$(redis-cli -s "$socket" --no-auth-warning -a "$password" config get maxmemory 2>&1 | sed -n 2p)
  if ! [[ $got =~ ^[0-9]+$ ]] || ((got == 0)); then
    echo "maxmemory: expected a limit (noeviction needs one), got '$got'"
    status=1
  fi
  redis-cli -s "$socket" --no-auth-warning -a "$password" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  ((status == 0)) || cat "$dir/redis.log"
  return $status
}

# The shipped compose and k8s Redis load deploy/users.acl (redis-start.sh).
redis_acl() {
  env "${COMPOSE_ENV[@]}" docker-compose --project-directory deploy -f deploy/docker-compose.yml --profile cpu config \
    >"$TMP/compose-acl.yml" || return 1
  mkdir -p "$TMP/redis-acl"
  $PYTHON $HERE/redis_acl_check.py "$TMP/compose-acl.yml" deploy/k8s "$TMP/redis-acl"
}

# Every worker lists every coordinator that its files run.
coordinators_listed() {
  env "${COMPOSE_ENV[@]}" \
    docker-compose --project-directory deploy -f deploy/docker-compose.yml --profile cpu config \
    >"$TMP/compose-coordinators.yml" || return 1
  $PYTHON $HERE/coordinators_check.py "$TMP/compose-coordinators.yml" deploy/k8s deploy/systemd/worker.env
}

# A second coordinator (compose service, k8s Deployment + Service) that the
# workers do not list fails the check; listing both passes it.
coordinators_listed_selftest() {
  local dir=$TMP/coordinators-selftest
  mkdir -p "$dir/k8s" || return 1
  [[ -f $TMP/compose-coordinators.yml ]] || coordinators_listed >/dev/null || return 1
  cp deploy/k8s/*.yaml "$dir/k8s/" || return 1
  $PYTHON - "$TMP/compose-coordinators.yml" "$dir" <<'EOF' || return 1
import copy, sys, yaml
compose, out = sys.argv[1], sys.argv[2]
c = yaml.safe_load(open(compose))
c["services"]["coordinator-2"] = copy.deepcopy(c["services"]["coordinator"])
yaml.safe_dump(c, open(out + "/compose-two.yml", "w"))
both = "tcp://coordinator:5555,tcp://coordinator-2:5555"
for s in c["services"].values():
    if str((s.get("command") or [""])[0]).endswith("/zkfarm-worker"):
        s["environment"]["ZKFARM_COORDINATOR"] = both
yaml.safe_dump(c, open(out + "/compose-both.yml", "w"))
docs = list(yaml.safe_load_all(open(out + "/k8s/30-coordinator.yaml")))
for d in docs:
    d["metadata"]["name"] = "zkfarm-coordinator-2"
    selector = d["spec"].get("selector") or {}
    for labels in (d["metadata"].get("labels", {}), selector, selector.get("matchLabels", {}),
                   d["spec"].get("template", {}).get("metadata", {}).get("labels", {})):
        if labels.get("app.kubernetes.io/name") == "zkfarm-coordinator":
            labels["app.kubernetes.io/name"] = "zkfarm-coordinator-2"
yaml.safe_dump_all(docs, open(out + "/k8s/31-coordinator-2.yaml", "w"))
EOF
  if $PYTHON $HERE/coordinators_check.py "$dir/compose-two.yml" deploy/k8s deploy/systemd/worker.env; then
    echo "a second compose coordinator that the workers do not list passed"
    return 1
  fi
  if $PYTHON $HERE/coordinators_check.py "$TMP/compose-coordinators.yml" "$dir/k8s" deploy/systemd/worker.env; then
    echo "a second k8s coordinator that the workers do not list passed"
    return 1
  fi
  sed -i 's|value: tcp://zkfarm-coordinator:5555$|value: tcp://zkfarm-coordinator:5555,tcp://zkfarm-coordinator-2.zkfarm.svc.cluster.local:5555|' \
    "$dir/k8s/40-workers.yaml" || return 1
  $PYTHON $HERE/coordinators_check.py "$dir/compose-both.yml" "$dir/k8s" deploy/systemd/worker.env
}

# The zkfarm image runs tini as PID 1; compose and k8s must keep it.
# shellcheck disable=SC2317  # run by check NAME FUNC through "$@", a call shellcheck cannot see
reaping_init() {
  local env=("${COMPOSE_ENV[@]}")
  env "${env[@]}" docker-compose --project-directory deploy -f deploy/docker-compose.yml --profile cpu config \
    >"$TMP/compose-init.yml" || return 1
  $PYTHON - "$TMP/compose-init.yml" deploy/docker/Dockerfile deploy/k8s/*.yaml <<'EOF'
import json, sys, yaml
compose, dockerfile, manifests = sys.argv[1], sys.argv[2], sys.argv[3:]
problems = []
entrypoints = [l for l in open(dockerfile) if l.startswith("ENTRYPOINT")]
if not entrypoints or json.loads(entrypoints[-1].split(None, 1)[1])[0] != "/usr/bin/tini":
    problems.append("%s: the last ENTRYPOINT is not /usr/bin/tini" % dockerfile)
zkfarm = 0
for name, service in (yaml.safe_load(open(compose)).get("services") or {}).items():
    if str(service.get("image", "")).startswith("zkfarm"):
        zkfarm += 1
        if "entrypoint" in service:
            problems.append("compose service %s replaces the image's tini (entrypoint:)" % name)
for path in manifests:
    for doc in yaml.safe_load_all(open(path)):
        spec = ((doc or {}).get("spec") or {}).get("template", {}).get("spec", {})
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            if str(c.get("image", "")).startswith("zkfarm"):
                zkfarm += 1
                if "command" in c:
                    problems.append("%s: container %s replaces the image's tini (command:; use args:)"
                                    % (path, c["name"]))
if zkfarm == 0:
    problems.append("no zkfarm container found in compose or k8s")
print("\n".join(problems) if problems else "tini is PID 1 in %d zkfarm containers" % zkfarm)
sys.exit(1 if problems else 0)
EOF
}

# The ZeroMQ endpoint of every shipped coordinator is loopback, or CURVE is
# on (a secret key and an allowlist), and the workers beside it carry the
# coordinator's public key and a secret key of their own.
secure_defaults() {
  local env=("${COMPOSE_ENV[@]}")
  env "${env[@]}" docker-compose --project-directory deploy -f deploy/docker-compose.yml --profile cpu config \
    >"$TMP/compose-secure.yml" || return 1
  $PYTHON - "$TMP/compose-secure.yml" <<'EOF'
import re, sys, yaml

def env_file(path):
    out = {}
    for line in open(path):
        m = re.match(r"^([A-Z_]+)=(.*)$", line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out

def loopback(endpoint):
    return re.match(r"^tcp://(127\.0\.0\.1|localhost|\[::1\]):", endpoint) is not None

problems = []
def witness_urls(name, env):
    # Deny by default: an operator names the store witnesses come from.
    if env.get("ZKFARM_WITNESS_URL_ALLOW") != "none":
        problems.append(f"{name}: ZKFARM_WITNESS_URL_ALLOW is not \"none\" (shipped configs allow no witness URL)")

def coordinator(name, env):
    witness_urls(name, env)
    listen = env.get("ZKFARM_LISTEN", "tcp://127.0.0.1:5555")
    if not loopback(listen) and not (env.get("ZKFARM_CURVE_SECRET_KEY_FILE") and env.get("ZKFARM_CURVE_ALLOWLIST")):
        problems.append(f"{name}: listens on {listen} without CURVE (ZKFARM_CURVE_SECRET_KEY_FILE, ZKFARM_CURVE_ALLOWLIST)")

def worker(name, env):
    witness_urls(name, env)
    if not (env.get("ZKFARM_CURVE_SERVER_KEY_FILE") or env.get("ZKFARM_CURVE_SERVER_KEY")) \
            or not env.get("ZKFARM_CURVE_SECRET_KEY_FILE"):
        problems.append(f"{name}: no CURVE keys (the coordinator requires them)")

coordinator("deploy/systemd/coordinator.env", env_file("deploy/systemd/coordinator.env"))
worker("deploy/systemd/worker.env", env_file("deploy/systemd/worker.env"))
services = yaml.safe_load(open(sys.argv[1]))["services"]
coordinator("docker-compose coordinator", services["coordinator"].get("environment", {}))
for name, s in services.items():
    if name.startswith("worker-"):
        worker(f"docker-compose {name}", s.get("environment", {}))
def k8s_env(path, container):
    for doc in yaml.safe_load_all(open(path)):
        if doc and doc.get("kind") in ("Deployment", "StatefulSet", "DaemonSet"):
            for c in doc["spec"]["template"]["spec"]["containers"]:
                if c["name"] == container:
                    return {e["name"]: e.get("value", "") for e in c.get("env", [])}
    return {}

coordinator("k8s 30-coordinator.yaml", k8s_env("deploy/k8s/30-coordinator.yaml", "coordinator"))
worker("k8s 40-workers.yaml", k8s_env("deploy/k8s/40-workers.yaml", "worker"))
print("\n".join(problems) or "every coordinator is on loopback or has CURVE on; every worker has keys; "
      "no daemon fetches a witness URL it is not told to")
sys.exit(1 if problems else 0)
EOF
}

# A free TCP port on 127.0.0.1.
free_port() {
  $PYTHON -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for_text FILE TEXT SECONDS: waits until FILE contains TEXT.
wait_for_text() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# load_env FILE DIR REDIS_PORT COORDINATOR_PORT: the ZKFARM_* settings of a
# shipped env file, one NAME=VALUE a line, with the host's paths
# (/etc/zkfarm, /srv/zkfarm) moved under DIR and the ports onto loopback.
load_env() {
  sed -n 's/^\(ZKFARM_[A-Z_]*=.*\)$/\1/p' "$1" |
    sed -e "s|/etc/zkfarm/|$2/etc/|g" -e "s|/srv/zkfarm/|$2/srv/|g" \
      -e "s|127.0.0.1:6379/|127.0.0.1:$3/|" \
      -e "s|tcp://0.0.0.0:5555|tcp://127.0.0.1:$4|" \
      -e "s|tcp://coordinator.example.internal:5555|tcp://127.0.0.1:$4|" \
      -e "s|^ZKFARM_METRICS_LISTEN=.*|ZKFARM_METRICS_LISTEN=127.0.0.1:0|" \
      -e "s|^ZKFARM_STATUS_LISTEN=.*|ZKFARM_STATUS_LISTEN=127.0.0.1:0|"
}

# deploy/redis.conf, deploy/systemd/coordinator.env and worker.env as an
# operator installs them: Redis from the shipped file (on a free loopback
# port and a temporary dir), the coordinator and a CPU worker with every
# setting of their env files (host paths, ports and keys moved into the
# temporary dir). Redis must refuse a client without the password; the
# coordinator must log in, take a job from the queue and fail it (unknown
# circuit) through its own transitions; the worker must be admitted over
# CURVE.
# The binaries deploy/docker/Dockerfile installs, built here (CPU-only
# without the CUDA toolkit: the same libraries but the driver's).
IMAGE_BINARIES=(coordinator/zkfarm-coordinator worker/zkfarm-worker cli/zkfarm cli/zkfarm-farm cli/zkfarm-prove)
IMAGE_PATHS=()  # their paths once built (image_binaries)
image_binaries() {
  ((${#IMAGE_PATHS[@]} == 0)) || return 0
  local targets=() b bin
  for b in "${IMAGE_BINARIES[@]}"; do targets+=("//${b%/*}:${b#*/}"); done
  bazel build "${targets[@]}" || return 1
  bin=$(bazel info bazel-bin 2>/dev/null) || return 1
  IMAGE_PATHS=("${IMAGE_BINARIES[@]/#/$bin/}")
}
image_libraries() {
  image_binaries || return 1
  $PYTHON $HERE/image_libs_check.py deploy/docker/Dockerfile "${IMAGE_PATHS[@]}"
}
image_libraries_selftest() {
  local out
  image_binaries || return 1
  sed 's/ libcurl4 / /' deploy/docker/Dockerfile >"$TMP/Dockerfile.nocurl"
  grep -q ' libcurl4 ' "$TMP/Dockerfile.nocurl" && { echo "selftest: could not remove libcurl4"; return 1; }
  if out=$($PYTHON $HERE/image_libs_check.py "$TMP/Dockerfile.nocurl" "${IMAGE_PATHS[@]}"); then
    echo "image_libs_check.py passed a runtime stage without libcurl4:"
    echo "$out"
    return 1
  fi
  grep -q 'no libcurl.so.4 (Debian package libcurl4)' <<<"$out" || { echo "unexpected report:"; echo "$out"; return 1; }
}

systemd_farm() {
  local bin
  bazel build //coordinator:zkfarm-coordinator //worker:zkfarm-worker //cli:zkfarm || return 1
  bin=$(bazel info bazel-bin 2>/dev/null) || return 1
  local dir=$TMP/systemd-farm
  mkdir -p "$dir/redis" "$dir/srv/artifacts" "$dir/srv/witnesses" "$dir/etc"
  local redis_port coordinator_port
  redis_port=$(free_port)
  coordinator_port=$(free_port)
  redis-server deploy/redis.conf --port "$redis_port" --dir "$dir/redis" --daemonize no \
    --logfile "$dir/redis.log" &
  local redis_pid=$!
  local -a coordinator_env worker_env
  local coordinator_pid='' worker_pid='' problem='' state='' password _
  for _ in $(seq 100); do
    [[ $(redis-cli -p "$redis_port" ping 2>&1) == *NOAUTH* ]] && break
    sleep 0.1
  done
  password=$(sed -n 's/^requirepass //p' deploy/redis.conf)
  mapfile -t coordinator_env < <(load_env deploy/systemd/coordinator.env "$dir" "$redis_port" "$coordinator_port")
  mapfile -t worker_env < <(load_env deploy/systemd/worker.env "$dir" "$redis_port" "$coordinator_port")
  if [[ $(redis-cli -p "$redis_port" ping 2>&1) != *NOAUTH* ]]; then
    problem="redis-server with deploy/redis.conf answers without a password"
  elif ! printf '%s\n' "${coordinator_env[@]}" | grep -q "^ZKFARM_REDIS=redis://.*@127.0.0.1:$redis_port/"; then
    problem="coordinator.env's ZKFARM_REDIS does not name deploy/redis.conf's port 6379 on loopback"
  else
    # The operator's keys, where the env files expect them.
    "$bin/cli/zkfarm" keygen --out "$dir/etc/coordinator" >/dev/null
    "$bin/cli/zkfarm" keygen --out "$dir/etc/worker" >/dev/null
    cp "$dir/etc/worker.public" "$dir/etc/workers.allow"
    env -i PATH="$PATH" "${coordinator_env[@]}" "$bin/coordinator/zkfarm-coordinator" >"$dir/coordinator.log" 2>&1 &
    coordinator_pid=$!
    env -i PATH="$PATH" "${worker_env[@]}" ZKFARM_METRICS_LISTEN=127.0.0.1:0 "$bin/worker/zkfarm-worker" --cpu \
      --id check/cpu >"$dir/worker.log" 2>&1 &
    worker_pid=$!
    if ! wait_for_text "$dir/coordinator.log" "listening on" 60; then
      problem="the coordinator did not start with coordinator.env's settings"
    else
      redis-cli -p "$redis_port" --no-auth-warning -a "$password" LPUSH zkfarm:queue:normal \
        '{"id":"deploy-check","circuit":"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff","partitions":[{"witness":"file:///srv/x.wtns"}]}' \
        >/dev/null
      for _ in $(seq 300); do
        state=$(redis-cli -p "$redis_port" --no-auth-warning -a "$password" HGET zkfarm:job:deploy-check state)
        [[ $state == failed ]] && break
        sleep 0.1
      done
      if [[ $state != failed ]]; then
        problem="the coordinator did not take and fail a queued job (state '$state')"
      elif ! wait_for_text "$dir/worker.log" "welcomed by coordinator" 60; then
        problem="a worker with worker.env's CURVE settings was not admitted"
      elif grep -E "WRONGPASS|NOAUTH|NOPERM" "$dir/coordinator.log"; then
        problem="Redis refused the coordinator"
      fi
    fi
  fi
  [[ -n $worker_pid ]] && { kill "$worker_pid" 2>/dev/null; wait "$worker_pid" 2>/dev/null; }
  [[ -n $coordinator_pid ]] && { kill "$coordinator_pid" 2>/dev/null; wait "$coordinator_pid" 2>/dev/null; }
  kill "$redis_pid" 2>/dev/null
  wait "$redis_pid" 2>/dev/null
  if [[ -n $problem ]]; then
    echo "$problem"
    for log in "$dir"/*.log; do
      echo "== $log"
      tail -20 "$log"
    done
    return 1
  fi
  echo "redis.conf requires the password; the coordinator logged in and failed a queued job; the worker was admitted over CURVE"
}

# acl_lines PASSWORD: the ACL users deploy/redis.conf documents (its
# "#   user zkfarm-..." lines), uncommented, with PASSWORD in place.
acl_lines() {
  sed -n 's/^#   \(user zkfarm-[a-z]* on >PASSWORD .*\)$/\1/p' deploy/redis.conf | sed "s/>PASSWORD />$1 /"
}

# The per-role ACL users of deploy/redis.conf, exactly as written there: a
# redis-server started with deploy/redis.conf and those lines (on a free
# loopback port), the CLI as zkfarm-client (circuit add, submit, wait,
# result), the coordinator as zkfarm-coordinator, a CPU worker as
# zkfarm-worker reading its artifacts from an HTTP store
# (tests/cluster/range_http_server.py) into a cache, one witness over HTTP
# and one in Redis. The job must be done, its proofs must verify, no
# process may meet NOPERM, and the worker user must be refused a write.
acl_farm() {
  local bin
  bazel build //coordinator:zkfarm-coordinator //worker:zkfarm-worker //cli:zkfarm || return 1
  bin=$(bazel info bazel-bin 2>/dev/null) || return 1
  local dir=$TMP/acl-farm
  mkdir -p "$dir/redis" "$dir/srv/artifacts" "$dir/srv/witnesses" "$dir/cache" "$dir/result"
  local password=acl-check-password
  local lines
  lines=$(acl_lines "$password")
  local users
  users=$(grep -c '^user ' <<<"$lines")
  if ((users != 3)); then
    echo "expected 3 ACL users (coordinator, client, worker) in deploy/redis.conf, found $users:"
    echo "$lines"
    return 1
  fi
  { echo "include $ROOT/deploy/redis.conf"; echo "$lines"; } >"$dir/redis-acl.conf"
  local redis_port coordinator_port http_port
  redis_port=$(free_port)
  coordinator_port=$(free_port)
  http_port=$(free_port)
  redis-server "$dir/redis-acl.conf" --port "$redis_port" --dir "$dir/redis" --daemonize no \
    --logfile "$dir/redis.log" &
  local redis_pid=$!
  $PYTHON tests/cluster/range_http_server.py "$http_port" --directory "$dir/srv" 2>"$dir/http.log" &
  local http_pid=$!
  local url="redis://%s:$password@127.0.0.1:$redis_port/0"
  local zkfarm=$bin/cli/zkfarm
  local -a farm
  # shellcheck disable=SC2059  # the format is ours: the user goes in the URL
  farm=(--redis "$(printf "$url" zkfarm-client)" --artifacts "$dir/srv/artifacts")
  local coordinator_pid='' worker_pid='' problem='' circuit='' job='' _
  for _ in $(seq 100); do
    [[ $(redis-cli -p "$redis_port" --user zkfarm-client --pass "$password" --no-auth-warning ping 2>&1) == PONG ]] &&
      break
    sleep 0.1
  done
  cp formats/testdata/bn128_mul.wtns "$dir/srv/witnesses/w.wtns"
  if ! circuit=$("$zkfarm" circuit add formats/testdata/bn128_mul.zkey "${farm[@]}" 2>"$dir/client.log"); then
    problem="zkfarm circuit add as zkfarm-client failed"
  elif ! redis-cli -p "$redis_port" --user zkfarm-client --pass "$password" --no-auth-warning -x \
    SET zkfarm:witness:acl-check <formats/testdata/bn128_mul.wtns >>"$dir/client.log" 2>&1; then
    problem="zkfarm-client cannot SET a redis:// witness"
  elif [[ $(redis-cli -p "$redis_port" --user zkfarm-worker --pass "$password" --no-auth-warning \
    SET zkfarm:witness:acl-check x 2>&1) != *NOPERM* ]]; then
    problem="the zkfarm-worker user may write (expected NOPERM)"
  else
    # shellcheck disable=SC2059
    "$bin/coordinator/zkfarm-coordinator" --id acl-check --redis "$(printf "$url" zkfarm-coordinator)" \
      --listen "tcp://127.0.0.1:$coordinator_port" --artifacts "$dir/srv/artifacts" \
      --witness-url-allow 127.0.0.1 --metrics-listen 127.0.0.1:0 >"$dir/coordinator.log" 2>&1 &
    coordinator_pid=$!
    # shellcheck disable=SC2059
    ZKFARM_THREADS=1 "$bin/worker/zkfarm-worker" --cpu --id acl/cpu --redis "$(printf "$url" zkfarm-worker)" \
      --coordinator "tcp://127.0.0.1:$coordinator_port" --artifacts "http://127.0.0.1:$http_port/artifacts/" \
      --cache-dir "$dir/cache" --witness-url-allow 127.0.0.1 --metrics-listen 127.0.0.1:0 \
      >"$dir/worker.log" 2>&1 &
    worker_pid=$!
    if ! job=$("$zkfarm" submit "$circuit" "$dir/srv/witnesses/w.wtns" \
      --witness-url-base "http://127.0.0.1:$http_port/witnesses/" "${farm[@]}" 2>>"$dir/client.log"); then
      problem="zkfarm submit as zkfarm-client failed"
    fi
    # The redis:// partition: a second job (submit's --witness-url-base names local files only).
    local job2=''
    if [[ -z $problem ]] && ! job2=$("$zkfarm" submit "$circuit" "redis://zkfarm:witness:acl-check" "${farm[@]}" \
      2>>"$dir/client.log"); then
      problem="zkfarm submit of a redis:// witness as zkfarm-client failed"
    fi
    local id state
    for id in $job $job2; do
      [[ -n $problem ]] && break
      state=$("$zkfarm" wait "$id" --timeout 60 --quiet "${farm[@]}" 2>>"$dir/client.log" |
        $PYTHON -c 'import json, sys; print(json.load(sys.stdin).get("state", ""))' 2>>"$dir/client.log")
      if [[ $state != "done" ]]; then
        problem="job $id ended '$state', not done"
      elif ! "$zkfarm" result "$id" --out "$dir/result/$id" "${farm[@]}" >>"$dir/client.log" 2>&1; then
        problem="zkfarm result $id as zkfarm-client failed"
      elif ! "$zkfarm" verify "$dir/srv/artifacts/$circuit/vk.json" "$dir/result/$id/public.json" \
        "$dir/result/$id/proof.json" >>"$dir/client.log" 2>&1; then
        problem="the proof of job $id does not verify"
      fi
    done
    if [[ -z $problem ]] && ! grep -q "downloaded http://127.0.0.1:$http_port/artifacts/$circuit/circuit.zkey" \
      "$dir/worker.log"; then
      problem="the worker did not download the circuit from the HTTP store"
    fi
  fi
  if [[ -z $problem ]] && grep -E "NOPERM|WRONGPASS|NOAUTH" "$dir"/*.log; then
    problem="Redis refused a command of a role (above)"
  fi
  [[ -n $worker_pid ]] && { kill "$worker_pid" 2>/dev/null; wait "$worker_pid" 2>/dev/null; }
  [[ -n $coordinator_pid ]] && { kill "$coordinator_pid" 2>/dev/null; wait "$coordinator_pid" 2>/dev/null; }
  kill "$http_pid" "$redis_pid" 2>/dev/null
  wait "$http_pid" "$redis_pid" 2>/dev/null
  if [[ -n $problem ]]; then
    echo "$problem"
    echo "== ACL lines"
    echo "${lines//>$password />PASSWORD }"
    for log in "$dir"/*.log; do
      echo "== $log"
      tail -20 "$log"
    done
    return 1
  fi
  echo "$users ACL users of deploy/redis.conf: the CLI, the coordinator and an HTTP-store worker proved 2 jobs" \
    "(an HTTP and a redis:// witness) under them; the worker user may not write"
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
check redis-acl redis_acl

check coordinators-listed coordinators_listed
check coordinators-listed-selftest coordinators_listed_selftest
check image-libraries image_libraries
check image-libraries-selftest image_libraries_selftest
check reaping-init reaping_init
check secure-defaults secure_defaults
check systemd-farm systemd_farm
check acl-farm acl_farm

((failed == 0)) || echo "failed: ${failures[*]}"
echo "check_deploy: $passed passed, $failed failed"
((failed == 0))
