#!/usr/bin/python3
"""k8s_check.py -- schema-aware check of the Kubernetes manifests in deploy/k8s/.

    k8s_check.py ROOT

Debian 12 has no kubeconform or kubeval, and its kubectl needs a cluster to
validate. It does have python3-kubernetes, whose model classes are generated
from the Kubernetes OpenAPI schema (API 1.22): for every type they list each
field's JSON name and type, and their constructors refuse a missing required
field. This script walks every document against those models:
  - apiVersion/kind must name a known model (core, apps, networking, policy...);
  - every field must exist in the schema (a misspelt key is an error, where
    kubectl would silently drop it), with the schema's type (string, integer,
    boolean, object, list, map; IntOrString and Quantity accept both);
  - required fields must be present (the client's own validation);
and then the farm's own rules: everything in namespace zkfarm; each workload's
selector matches its pod labels; each Service selects a workload; ConfigMaps,
Secrets' users and PVCs referenced exist (Secrets are created by the operator,
so only their names are listed); every worker container requests exactly one
nvidia.com/gpu (requests and limits); kustomization.yaml lists every manifest. Exit 1 on any problem.
"""

import os
import re
import sys

import kubernetes.client as k8s
import yaml
from kubernetes.client import ApiClient

GROUP_PREFIX = {"v1": "V1", "apps/v1": "V1", "networking.k8s.io/v1": "V1", "policy/v1": "V1",
                "batch/v1": "V1", "rbac.authorization.k8s.io/v1": "V1", "autoscaling/v2beta2": "V2beta2"}
# Fields typed "object" in the models whose values may be int or string.
INT_OR_STRING = "object"
# Secrets the operator creates by hand (see the comments in the manifests).
OPERATOR_SECRETS = {"zkfarm-redis", "zkfarm-grafana"}

problems = []


def problem(where, message):
    problems.append(f"{where}: {message}")
    print(f"  {where}: {message}")


def model_class(api_version, kind):
    prefix = GROUP_PREFIX.get(api_version)
    if prefix is None:
        return None
    return getattr(k8s, prefix + kind, None)


def check_value(where, value, type_name):
    """Checks value against a model type string ('str', 'list[V1Container]', ...)."""
    if value is None:
        return
    m = re.fullmatch(r"list\[(.+)\]", type_name)
    if m:
        if not isinstance(value, list):
            problem(where, f"expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            check_value(f"{where}[{i}]", item, m.group(1))
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", type_name)
    if m:
        if not isinstance(value, dict):
            problem(where, f"expected a map, got {type(value).__name__}")
            return
        for key, item in value.items():
            if not isinstance(key, str):
                problem(where, f"map key {key!r} is not a string")
            check_value(f"{where}.{key}", item, m.group(1))
        return
    if type_name == "str":
        if not isinstance(value, str):
            problem(where, f"expected a string, got {type(value).__name__} {value!r} (quote it)")
        return
    if type_name == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            problem(where, f"expected an integer, got {value!r}")
        return
    if type_name == "bool":
        if not isinstance(value, bool):
            problem(where, f"expected true/false, got {value!r}")
        return
    if type_name == "float":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            problem(where, f"expected a number, got {value!r}")
        return
    if type_name in (INT_OR_STRING, "datetime", "date"):
        return
    if type_name == "quantity":  # resource.Quantity: "4Gi", "500m", 1
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            problem(where, f"expected a quantity, got {value!r}")
        return
    cls = getattr(k8s, type_name, None)
    if cls is None:
        problem(where, f"schema type {type_name} unknown to the checker")
        return
    check_object(where, value, cls)


def check_object(where, obj, cls):
    if not isinstance(obj, dict):
        problem(where, f"expected an object ({cls.__name__}), got {type(obj).__name__}")
        return
    json_to_attr = {json_name: attr for attr, json_name in cls.attribute_map.items()}
    for key, value in obj.items():
        attr = json_to_attr.get(key)
        if attr is None:
            problem(where, f"unknown field '{key}' in {cls.__name__}")
            continue
        type_name = cls.openapi_types[attr]
        if cls is k8s.V1ResourceRequirements:
            type_name = type_name.replace("dict(str, str)", "dict(str, quantity)")
        check_value(f"{where}.{key}", value, type_name)


def required_fields(where, doc, cls):
    """The client's constructors raise ValueError for a missing required field."""
    try:
        ApiClient()._ApiClient__deserialize(doc, cls.__name__)
    except ValueError as e:
        problem(where, f"schema: {e}")


def pod_specs(doc):
    kind = doc.get("kind")
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        return [doc["spec"]["template"]]
    return []


def main(argv):
    root = argv[1]
    k8s_dir = os.path.join(root, "deploy/k8s")
    manifests = sorted(f for f in os.listdir(k8s_dir) if f.endswith(".yaml") and f != "kustomization.yaml")
    docs = []
    for name in manifests:
        with open(os.path.join(k8s_dir, name), encoding="utf-8") as f:
            for i, doc in enumerate(yaml.safe_load_all(f)):
                if doc is not None:
                    docs.append((f"{name}#{i}", doc))

    for where, doc in docs:
        api_version, kind = doc.get("apiVersion"), doc.get("kind")
        cls = model_class(api_version, kind)
        if cls is None:
            problem(where, f"unknown apiVersion/kind {api_version}/{kind}")
            continue
        where = f"{where} {kind}/{doc.get('metadata', {}).get('name')}"
        check_object(where, doc, cls)
        required_fields(where, doc, cls)
        meta = doc.get("metadata", {})
        if kind != "Namespace" and meta.get("namespace") != "zkfarm":
            problem(where, "not in namespace zkfarm")
        if meta.get("labels", {}).get("app.kubernetes.io/part-of") != "zkfarm":
            problem(where, "missing label app.kubernetes.io/part-of: zkfarm")

    by_kind = {}
    for where, doc in docs:
        by_kind.setdefault(doc.get("kind"), {})[doc.get("metadata", {}).get("name")] = (where, doc)
    config_maps = {name: set(doc.get("data", {})) for name, (_, doc) in by_kind.get("ConfigMap", {}).items()}
    pvcs = set(by_kind.get("PersistentVolumeClaim", {}))
    workloads = [(w, d) for kind in ("Deployment", "StatefulSet") for w, d in by_kind.get(kind, {}).values()]

    for where, doc in workloads:
        spec = doc["spec"]
        template_labels = spec["template"]["metadata"].get("labels", {})
        for key, value in spec["selector"].get("matchLabels", {}).items():
            if template_labels.get(key) != value:
                problem(where, f"selector {key}={value} does not match the pod labels")
        claim_templates = {t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])}
        pod = spec["template"]["spec"]
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for volume in volumes.values():
            if "configMap" in volume:
                cm = volume["configMap"]["name"]
                if cm not in config_maps:
                    problem(where, f"volume {volume['name']}: no ConfigMap {cm}")
                for item in volume["configMap"].get("items", []):
                    if item["key"] not in config_maps.get(cm, set()):
                        problem(where, f"volume {volume['name']}: ConfigMap {cm} has no key {item['key']}")
            if "persistentVolumeClaim" in volume and volume["persistentVolumeClaim"]["claimName"] not in pvcs:
                problem(where, f"volume {volume['name']}: no PVC {volume['persistentVolumeClaim']['claimName']}")
        for container in pod["containers"]:
            for mount in container.get("volumeMounts", []):
                if mount["name"] not in volumes and mount["name"] not in claim_templates:
                    problem(where, f"container {container['name']}: mount of unknown volume {mount['name']}")
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref and ref["name"] not in OPERATOR_SECRETS:
                    problem(where, f"env {env['name']}: Secret {ref['name']} is not documented")
            ports = {p.get("name") for p in container.get("ports", [])}
            for probe in ("readinessProbe", "livenessProbe"):
                for handler in ("httpGet", "tcpSocket"):
                    port = container.get(probe, {}).get(handler, {}).get("port")
                    if isinstance(port, str) and port not in ports:
                        problem(where, f"{probe} uses unknown port name {port}")
            if doc["metadata"]["name"] == "zkfarm-worker":
                resources = container.get("resources", {})
                for section in ("requests", "limits"):
                    if str(resources.get(section, {}).get("nvidia.com/gpu")) != "1":
                        problem(where, f"worker container must have {section} nvidia.com/gpu: \"1\"")
                # args: the image's ENTRYPOINT (tini) runs them; command: would replace it.
                if "--device" not in container.get("args", []):
                    problem(where, "worker must be started with --device (in args:)")
            sc = container.get("securityContext", {})
            if sc.get("allowPrivilegeEscalation") is not False or "ALL" not in sc.get("capabilities", {}).get("drop", []):
                problem(where, f"container {container['name']}: must drop ALL capabilities, no privilege escalation")

    for where, doc in by_kind.get("Service", {}).values():
        selector = doc["spec"].get("selector", {})
        if not any(all(d["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in selector.items())
                   for _, d in workloads):
            problem(where, f"selector {selector} matches no workload")
        for port in doc["spec"].get("ports", []):
            target = port.get("targetPort")
            if isinstance(target, str) and not any(
                    target in {p.get("name") for c in d["spec"]["template"]["spec"]["containers"]
                               for p in c.get("ports", [])}
                    for _, d in workloads
                    if all(d["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in selector.items())):
                problem(where, f"targetPort {target} is no container port name of the selected pods")

    with open(os.path.join(k8s_dir, "kustomization.yaml"), encoding="utf-8") as f:
        listed = set(yaml.safe_load(f).get("resources", []))
    for name in manifests:
        if name not in listed:
            problem("kustomization.yaml", f"does not list {name}")
    for name in listed - set(manifests):
        problem("kustomization.yaml", f"lists missing {name}")

    print(f"  {len(docs)} objects in {len(manifests)} manifests checked against the Kubernetes schema")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
