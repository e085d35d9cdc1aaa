#!/usr/bin/python3
"""promql_check.py -- dashboards and alert rules use only catalogued metrics.

    promql_check.py ROOT OUT_RULES_FILE

Reads the metric catalogue of ROOT/docs/METRICS.md and checks:
  1. the catalogue itself follows Prometheus naming conventions (zkfarm_
     prefix, counters end in _total and nothing else does, histograms carry a
     base unit, no duplicates);
  2. every PromQL expression in monitoring/alerts.yml and in the Grafana
     dashboards (panel targets and variable queries) names only catalogued
     metrics (histograms: _bucket/_sum/_count) or `up`, and matches only
     labels those metrics have;
  3. the dashboards are provisioning-ready (datasource variable, every panel
     and target on ${datasource}, unique uids and panel ids).
It writes every dashboard expression, with Grafana's variables replaced by
sample values, as a recording rule to OUT_RULES_FILE, so that
`promtool check rules` can check their syntax. Prints one line per problem;
exit status 1 if there is any.
"""

import glob
import json
import os
import re
import sys

import yaml

PROMETHEUS_LABELS = {"job", "instance"}
WORKER_CONSTANT_LABELS = {"worker", "device"}
SYNTHETIC = {"up": {"labels": set(), "type": "gauge", "worker": False}}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
            "group_right", "inf", "nan", "atan2"}

problems = []


def problem(message):
    problems.append(message)
    print("  " + message)


def read_catalogue(path):
    catalogue = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("| `zkfarm_"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            name = cells[0].strip("`")
            if name in catalogue:
                problem(f"METRICS.md: {name} listed twice")
            labels = set() if cells[3] == "(none)" else {l.strip().strip("`") for l in cells[3].split(",")}
            catalogue[name] = {"type": cells[1], "unit": cells[2], "labels": labels,
                               "worker": "worker" in cells[4], "coordinator": "coordinator" in cells[4]}
    return catalogue


def check_conventions(catalogue):
    if len(catalogue) < 30:
        problem(f"METRICS.md: only {len(catalogue)} metrics found: table format changed?")
    for name, m in catalogue.items():
        if not re.fullmatch(r"zkfarm_[a-z][a-z0-9_]*[a-z0-9]", name):
            problem(f"METRICS.md: {name}: not snake_case with the zkfarm_ prefix")
        if m["type"] not in ("counter", "gauge", "histogram"):
            problem(f"METRICS.md: {name}: unknown type {m['type']}")
        if (m["type"] == "counter") != name.endswith("_total"):
            problem(f"METRICS.md: {name}: counters, and only counters, end in _total")
        if m["type"] == "histogram" and not re.search(r"_(seconds|bytes)$", name):
            problem(f"METRICS.md: {name}: a histogram names its base unit")
        if m["unit"] == "seconds" and "_seconds" not in name:
            problem(f"METRICS.md: {name}: unit seconds but no _seconds in the name")
        if m["unit"] == "bytes" and "_bytes" not in name:
            problem(f"METRICS.md: {name}: unit bytes but no _bytes in the name")
        if re.search(r"_(ms|milliseconds|us|microseconds|kb|mb|gb|minutes|hours)(_|$)", name):
            problem(f"METRICS.md: {name}: not a base unit")
        if m["labels"] & (PROMETHEUS_LABELS | {"le", "quantile"}):
            problem(f"METRICS.md: {name}: label clashes with Prometheus's own")
        if not (m["worker"] or m["coordinator"]):
            problem(f"METRICS.md: {name}: exported by neither process")


def lookup(catalogue, name):
    """Catalogue entry of a series name (histogram suffixes allowed), or None."""
    if name in SYNTHETIC:
        return SYNTHETIC[name]
    if name in catalogue:
        return catalogue[name]
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and catalogue.get(base, {}).get("type") == "histogram":
            entry = dict(catalogue[base])
            if suffix == "_bucket":
                entry["labels"] = entry["labels"] | {"le"}
            return entry
    return None


def grafana_to_promql(expr):
    """Replaces Grafana's variables by values PromQL accepts."""
    expr = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace("$__range", "1h")
    return re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", "x", expr)


def metric_names(expr):
    """Metric names in a PromQL expression (a tokenizer, not a parser)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)   # strings
    text = re.sub(r"\{[^}]*\}", " ", text)                                 # label matchers
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)                                # ranges, subqueries
    text = re.sub(r"\boffset\s+\S+", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        token = match.group(0)
        rest = text[match.end():].lstrip()
        if rest.startswith("(") or token.lower() in KEYWORDS:
            continue  # a function or aggregation, or an operator keyword
        if re.fullmatch(r"\d.*", token):
            continue
        names.add(token)
    return names


def matched_labels(expr):
    """(metric, label) pairs of `metric{label=...}` selectors."""
    pairs = []
    for m in re.finditer(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}", expr):
        for label in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", m.group(2)):
            pairs.append((m.group(1), label))
    return pairs


def check_expr(catalogue, where, expr):
    for name in sorted(metric_names(expr)):
        if lookup(catalogue, name) is None:
            problem(f"{where}: '{name}' is not in docs/METRICS.md")
    for name, label in matched_labels(expr):
        entry = lookup(catalogue, name)
        if entry is None:
            continue
        allowed = entry["labels"] | PROMETHEUS_LABELS | (WORKER_CONSTANT_LABELS if entry["worker"] else set())
        if label not in allowed:
            problem(f"{where}: {name} has no label '{label}'")


def panels_of(dashboard):
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # collapsed rows


def main(argv):
    root, rules_out = argv[1], argv[2]
    catalogue = read_catalogue(os.path.join(root, "docs/METRICS.md"))
    check_conventions(catalogue)
    checked = 0

    with open(os.path.join(root, "monitoring/alerts.yml"), encoding="utf-8") as f:
        alerts = yaml.safe_load(f)
    for group in alerts["groups"]:
        for rule in group["rules"]:
            check_expr(catalogue, f"alerts.yml {rule.get('alert') or rule.get('record')}", rule["expr"])
            checked += 1

    recording_rules = []
    uids = set()
    files = sorted(glob.glob(os.path.join(root, "monitoring/grafana/dashboards/*.json")))
    if len(files) < 3:
        problem("expected the farm-overview, gpus and circuits dashboards")
    for path in files:
        name = os.path.basename(path)
        try:
            with open(path, encoding="utf-8") as f:
                dashboard = json.load(f)
        except ValueError as e:
            problem(f"{name}: not valid JSON: {e}")
            continue
        if dashboard.get("uid") in uids or not dashboard.get("uid"):
            problem(f"{name}: missing or duplicate uid")
        uids.add(dashboard.get("uid"))
        if dashboard.get("id") is not None:
            problem(f"{name}: id must be null for provisioning")
        variables = dashboard.get("templating", {}).get("list", [])
        if not any(v.get("name") == "datasource" and v.get("type") == "datasource" and v.get("query") == "prometheus"
                   for v in variables):
            problem(f"{name}: no `datasource` variable of type prometheus")
        for v in variables:
            if v.get("type") != "query":
                continue
            if v.get("datasource", {}).get("uid") != "${datasource}":
                problem(f"{name}: variable {v.get('name')} not on ${{datasource}}")
            m = re.fullmatch(r"label_values\(\s*([^,()]+?)\s*,\s*(\w+)\s*\)", v.get("definition", ""))
            if not m:
                problem(f"{name}: variable {v.get('name')}: expected label_values(metric, label)")
                continue
            check_expr(catalogue, f"{name} variable {v['name']}", m.group(1))
            entry = lookup(catalogue, metric_names(m.group(1)).pop() if metric_names(m.group(1)) else "")
            if entry and m.group(2) not in entry["labels"] | WORKER_CONSTANT_LABELS:
                problem(f"{name}: variable {v['name']}: no label {m.group(2)}")
        ids = set()
        for panel in panels_of(dashboard):
            if panel.get("id") in ids:
                problem(f"{name}: duplicate panel id {panel.get('id')}")
            ids.add(panel.get("id"))
            if panel.get("type") == "row":
                continue
            title = panel.get("title", "?")
            if panel.get("datasource", {}).get("uid") != "${datasource}":
                problem(f"{name} '{title}': panel data source is not ${{datasource}}")
            if not panel.get("targets"):
                problem(f"{name} '{title}': no query")
            for t in panel.get("targets", []):
                if t.get("datasource", {}).get("uid") != "${datasource}":
                    problem(f"{name} '{title}': target data source is not ${{datasource}}")
                check_expr(catalogue, f"{name} '{title}'", t["expr"])
                recording_rules.append({"record": f"dashboard:check:{len(recording_rules)}",
                                        "expr": grafana_to_promql(t["expr"])})
                checked += 1

    with open(rules_out, "w", encoding="utf-8") as out:
        yaml.safe_dump({"groups": [{"name": "dashboard-expressions", "rules": recording_rules}]}, out,
                       sort_keys=False, width=1000)
    print(f"  {checked} expressions checked against {len(catalogue)} catalogued metrics")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
