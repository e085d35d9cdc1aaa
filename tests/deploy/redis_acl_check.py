#!/usr/bin/python3
"""redis_acl_check.py -- the shipped compose and Kubernetes Redis load deploy/users.acl.

    redis_acl_check.py COMPOSE_CONFIG K8S_DIR TMP

COMPOSE_CONFIG is `docker-compose config` of deploy/docker-compose.yml (the
variables of check_deploy.sh's COMPOSE_ENV substituted), K8S_DIR deploy/k8s.
For each of the two, the Redis container's command runs here as written,
with a real redis-server: the files it mounts are the compose file's bind
sources and the generated ConfigMap's data (11-redis-config.yaml), /data a
temporary directory, its passwords the compose variables and made-up Secret
values, and a Unix socket instead of a TCP port. Then:
  * the users of deploy/users.acl are there, each with the password given
    (the ACL file on the data volume holds hashes, never a password);
  * the coordinator's and the workers' ZKFARM_REDIS log in as zkfarm-admin
    and zkfarm-worker, the worker user cannot write;
  * the admin's ACL SAVE writes the file (`zkfarm tenant add` needs it), and
    a restart keeps a tenant's user saved there;
  * without one of the passwords the command refuses to start, naming it.
Standard library and python3-yaml only.
"""

import os
import shutil
import subprocess
import sys
import time
import urllib.parse

import yaml

SECRET = {"password": "k8s-default-pw", "admin-password": "k8s-admin-pw", "worker-password": "k8s-worker-pw"}
problems = []


def redis_cli(socket, user, password, *command):
    args = ["redis-cli", "-s", socket, "--no-auth-warning"]
    if user:
        args += ["--user", user]
    if password:
        args += ["--pass", password]
    out = subprocess.run(args + list(command), capture_output=True, text=True, timeout=10)
    return (out.stdout + out.stderr).strip()


def start(name, command, env, data):
    """Runs the container command; returns (process, socket)."""
    socket = os.path.join(data, "redis.sock")
    log = open(os.path.join(data, "..", name + "-redis.log"), "a")
    process = subprocess.Popen(command + ["--port", "0", "--unixsocket", socket, "--daemonize", "no"],
                               env={"PATH": os.environ["PATH"], **env}, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        if os.path.exists(socket) or process.poll() is not None:
            break
        time.sleep(0.1)
    return process, socket


def stop(process):
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def url_login(url):
    u = urllib.parse.urlparse(url)
    return urllib.parse.unquote(u.username or ""), urllib.parse.unquote(u.password or "")


def check(name, command, env, coordinator_url, worker_url, tmp):
    where = os.path.join(tmp, name)
    data = os.path.join(where, "data")
    os.makedirs(data, exist_ok=True)
    command = [a if a != "/data" else data for a in command]
    process, socket = start(name, command, env, data)
    try:
        if process.poll() is not None:
            problems.append(f"{name}: the Redis command exited ({process.returncode}): "
                            + open(os.path.join(where, name + "-redis.log")).read()[-2000:])
            return
        acl = os.path.join(data, "users.acl")
        text = open(acl).read() if os.path.exists(acl) else ""
        for password in (env.get("REDIS_PASSWORD"), env.get("REDIS_ADMIN_PASSWORD"), env.get("REDIS_WORKER_PASSWORD")):
            if password and password in text:
                problems.append(f"{name}: {acl} holds a password in clear")
        if redis_cli(socket, "default", env["REDIS_PASSWORD"], "PING") != "PONG":
            problems.append(f"{name}: the default user does not log in with REDIS_PASSWORD")
        user, password = url_login(coordinator_url)
        if user != "zkfarm-admin":
            problems.append(f"{name}: the coordinator's ZKFARM_REDIS logs in as '{user}', not zkfarm-admin")
        if redis_cli(socket, user, password, "ACL", "WHOAMI") != "zkfarm-admin":
            problems.append(f"{name}: the coordinator's ZKFARM_REDIS does not log in: "
                            + redis_cli(socket, user, password, "ACL", "WHOAMI"))
        got = redis_cli(socket, user, password, "CONFIG", "GET", "aclfile").splitlines()
        if got[-1:] != [acl]:
            problems.append(f"{name}: aclfile is {got}, expected {acl} (on the data volume)")
        user, password = url_login(worker_url)
        if user != "zkfarm-worker":
            problems.append(f"{name}: the workers' ZKFARM_REDIS logs in as '{user}', not zkfarm-worker")
        if redis_cli(socket, user, password, "ACL", "WHOAMI") != "zkfarm-worker":
            problems.append(f"{name}: the workers' ZKFARM_REDIS does not log in")
        if "NOPERM" not in redis_cli(socket, user, password, "SET", "zkfarm:x", "1"):
            problems.append(f"{name}: the worker user may write")
        admin = url_login(coordinator_url)
        tenant = ["ACL", "SETUSER", "zkfarm-tenant-check", "on", ">tenant-check-pw", "~zkfarm:t:check:*", "+ping"]
        if redis_cli(socket, *admin, *tenant) != "OK" or redis_cli(socket, *admin, "ACL", "SAVE") != "OK":
            problems.append(f"{name}: the admin cannot save a tenant's user into the ACL file")
    finally:
        stop(process)
    # A restart keeps the saved file (and the tenant in it).
    process, socket = start(name, command, env, data)
    try:
        for user, password in (("zkfarm-tenant-check", "tenant-check-pw"), url_login(worker_url),
                               url_login(coordinator_url)):
            if redis_cli(socket, user, password, "ACL", "WHOAMI") != user and user != "zkfarm-tenant-check":
                problems.append(f"{name}: after a restart {user} does not log in")
            if redis_cli(socket, user, password, "PING") != "PONG":
                problems.append(f"{name}: after a restart {user} does not log in")
    finally:
        stop(process)
    # Without the worker password on a first start: refused, named.
    bare = os.path.join(where, "bare")
    os.makedirs(bare, exist_ok=True)
    partial = {k: v for k, v in env.items() if k != "REDIS_WORKER_PASSWORD"}
    out = subprocess.run([a if a != data else bare for a in command], env={"PATH": os.environ["PATH"], **partial},
                         capture_output=True, text=True, timeout=20)
    if out.returncode == 0 or "REDIS_WORKER_PASSWORD" not in out.stderr:
        problems.append(f"{name}: without REDIS_WORKER_PASSWORD: exit {out.returncode}, {out.stderr.strip()}")


def compose(config, tmp):
    services = yaml.safe_load(open(config))["services"]
    redis = services["redis"]
    mounts = {}
    for v in redis.get("volumes", []):
        if isinstance(v, dict) and v.get("type") == "bind":
            mounts[v["target"]] = v["source"]
        elif isinstance(v, str) and v.startswith("/"):
            parts = v.split(":")
            mounts[parts[1]] = parts[0]
    command = []
    for arg in redis["command"]:
        for target, source in mounts.items():
            if arg == target:
                arg = source
        command.append(arg)
    env = {k: str(v) for k, v in (redis.get("environment") or {}).items()}
    workers = [s for n, s in services.items() if n.startswith("worker-")]
    check("compose", command, env, services["coordinator"]["environment"]["ZKFARM_REDIS"],
          workers[0]["environment"]["ZKFARM_REDIS"], tmp)


def container(path, kind_name):
    for doc in yaml.safe_load_all(open(path)):
        if doc and doc.get("kind") in ("Deployment", "StatefulSet"):
            for c in doc["spec"]["template"]["spec"]["containers"]:
                if c["name"] == kind_name:
                    return doc["spec"]["template"]["spec"], c
    raise SystemExit(f"{path}: no container {kind_name}")


def k8s_env(c):
    """The container's env with Secret references resolved to SECRET and $(VAR) expanded."""
    env = {}
    for e in c.get("env", []):
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            if ref.get("name") == "zkfarm-redis":
                env[e["name"]] = SECRET[ref["key"]]
            continue
        value = e.get("value", "")
        for k, v in env.items():
            value = value.replace(f"$({k})", v)
        env[e["name"]] = value
    return env


def k8s(directory, tmp):
    spec, redis = container(os.path.join(directory, "10-redis.yaml"), "redis")
    config = next(d for d in yaml.safe_load_all(open(os.path.join(directory, "11-redis-config.yaml"))) if d)
    files = os.path.join(tmp, "k8s-config")
    os.makedirs(files, exist_ok=True)
    for key, text in config["data"].items():
        with open(os.path.join(files, key), "w") as f:
            f.write(text)
    mount = next(m["mountPath"] for m in redis["volumeMounts"] if m["name"] == "config")
    command = [os.path.join(files, a[len(mount) + 1:]) if a.startswith(mount + "/") else a for a in redis["command"]]
    env = k8s_env(redis)
    _, coordinator = container(os.path.join(directory, "30-coordinator.yaml"), "coordinator")
    _, worker = container(os.path.join(directory, "40-workers.yaml"), "worker")
    check("k8s", command, env, k8s_env(coordinator)["ZKFARM_REDIS"], k8s_env(worker)["ZKFARM_REDIS"], tmp)


def main(argv):
    compose(argv[1], argv[3])
    k8s(argv[2], argv[3])
    print("\n".join(problems) or "compose and k8s: Redis loads deploy/users.acl from the data volume; "
          "the coordinator logs in as zkfarm-admin, the workers as zkfarm-worker (read-only); "
          "tenants' users are saved and kept across a restart")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
