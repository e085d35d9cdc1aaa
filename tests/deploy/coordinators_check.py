#!/usr/bin/python3
"""Workers of deploy/ list every coordinator that the same files run.

  coordinators_check.py COMPOSE_CONFIG K8S_DIR WORKER_ENV

COMPOSE_CONFIG is `docker-compose config` output of deploy/docker-compose.yml,
K8S_DIR the manifests (deploy/k8s), WORKER_ENV deploy/systemd/worker.env.
A worker's coordinators are its --coordinator flags, else ZKFARM_COORDINATOR
(endpoints separated by ','). Each must be tcp://HOST:PORT; in compose and
k8s the set must be exactly the coordinators those files run: every service
(compose) or every Service selecting a coordinator pod (k8s), at its ZeroMQ
port. Prints the problems (or a summary); exit status 1 when there is one.
"""

import glob
import re
import sys

import yaml

ENDPOINT = re.compile(r"^tcp://([A-Za-z0-9.\-]+|\[[0-9a-fA-F:]+\]):([0-9]{1,5})$")
problems = []


def k8s_argv(container):
    """What a k8s container runs after the image's ENTRYPOINT (tini): its
    args, or a command that replaced the entrypoint."""
    return container.get("command") or container.get("args") or []


def runs(command, binary):
    return bool(command) and str(command[0]).endswith("/" + binary)


def listen_port(env):
    m = re.search(r":([0-9]+)$", str(env.get("ZKFARM_LISTEN", "tcp://127.0.0.1:5555")))
    return int(m.group(1)) if m else 5555


def worker_coordinators(name, command, env):
    """The endpoints a worker is given, checked for syntax."""
    flags = [command[i + 1] for i in range(len(command) - 1) if command[i] == "--coordinator"]
    if not flags:
        value = env.get("ZKFARM_COORDINATOR")
        if value is None:
            problems.append(f"{name}: no --coordinator and no ZKFARM_COORDINATOR (it would use tcp://127.0.0.1:5555)")
            return []
        flags = str(value).split(",")
    endpoints = []
    for entry in flags:
        m = ENDPOINT.match(entry.strip())
        if not m:
            problems.append(f"{name}: coordinator endpoint '{entry}' is not tcp://HOST:PORT "
                            "(ZKFARM_COORDINATOR separates several with ',')")
            continue
        endpoints.append((m.group(1), int(m.group(2))))
    return endpoints


def same_set(name, given, expected, normalize=lambda host: host):
    given_set = {(normalize(h), p) for h, p in given}
    for host, port in sorted(expected - given_set):
        problems.append(f"{name}: does not list the coordinator tcp://{host}:{port}")
    for host, port in sorted(given_set - expected):
        problems.append(f"{name}: lists tcp://{host}:{port}, which is no coordinator of these files")


def compose(path):
    services = yaml.safe_load(open(path))["services"]
    expected = set()
    for name, s in services.items():
        if runs(s.get("command"), "zkfarm-coordinator"):
            expected.add((name, listen_port(s.get("environment") or {})))
    workers = 0
    for name, s in services.items():
        if runs(s.get("command"), "zkfarm-worker"):
            workers += 1
            given = worker_coordinators(f"docker-compose {name}", s["command"], s.get("environment") or {})
            same_set(f"docker-compose {name}", given, expected)
    return len(expected), workers


def k8s(directory):
    docs = []
    for path in sorted(glob.glob(directory + "/*.yaml")):
        docs += [d for d in yaml.safe_load_all(open(path)) if d]
    workloads = [d for d in docs if d.get("kind") in ("Deployment", "StatefulSet", "DaemonSet")]
    coordinator_labels = []
    for w in workloads:
        for c in w["spec"]["template"]["spec"]["containers"]:
            if runs(k8s_argv(c), "zkfarm-coordinator"):
                coordinator_labels.append(w["spec"]["template"]["metadata"].get("labels", {}))
    expected = set()
    for svc in (d for d in docs if d.get("kind") == "Service"):
        selector = svc["spec"].get("selector") or {}
        if not selector or not any(selector.items() <= labels.items() for labels in coordinator_labels):
            continue
        for port in svc["spec"].get("ports", []):
            if port.get("name") == "zmq":
                expected.add((svc["metadata"]["name"], int(port["port"])))
    if len(expected) < len(coordinator_labels):
        problems.append("k8s: a coordinator workload has no Service with a port named zmq")

    def short(host):  # name, name.namespace, ...svc.cluster.local
        return host.split(".")[0]

    workers = 0
    for w in workloads:
        for c in w["spec"]["template"]["spec"]["containers"]:
            if runs(k8s_argv(c), "zkfarm-worker"):
                workers += 1
                env = {e["name"]: e.get("value", "") for e in c.get("env", [])}
                name = f"k8s {w['metadata']['name']}"
                same_set(name, worker_coordinators(name, k8s_argv(c), env), expected, short)
    return len(expected), workers


def env_file(path):
    out = {}
    for line in open(path):
        m = re.match(r"^([A-Z_]+)=(.*)$", line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def main():
    compose_config, k8s_dir, worker_env = sys.argv[1:4]
    c = compose(compose_config)
    k = k8s(k8s_dir)
    if not worker_coordinators(worker_env, [], env_file(worker_env)):
        problems.append(f"{worker_env}: lists no coordinator")
    if c[0] == 0 or c[1] == 0 or k[0] == 0 or k[1] == 0:
        problems.append(f"found no coordinator or no worker (compose {c}, k8s {k}): the check sees nothing")
    print("\n".join(problems) or f"every worker lists every coordinator: compose {c[0]} for {c[1]} workers, "
                                 f"k8s {k[0]} for {k[1]} workers")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
