#!/usr/bin/python3
"""dashboards.py -- generates zkfarm's Grafana dashboards (provisioning-ready JSON).

    monitoring/grafana/dashboards.py            rewrite dashboards/*.json
    monitoring/grafana/dashboards.py --check    exit 1 if a file is out of date

The JSON files are checked in (Grafana provisioning and the Kubernetes
ConfigMaps read them as they are); this script is their source, so a panel is
a few lines here instead of sixty lines of JSON. tests/deploy/check_deploy.sh
runs --check and checks that every PromQL expression uses only names from
docs/METRICS.md.

Every dashboard selects its data source through the `datasource` variable
(type prometheus), so it works with whatever Prometheus data source a Grafana
has; no panel names a data source uid. Standard library only.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "dashboards")

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
RATE = "$__rate_interval"

# ---- building blocks --------------------------------------------------------


def target(expr, legend="", ref="A", instant=False, fmt=None):
    t = {"datasource": DATASOURCE, "expr": expr, "legendFormat": legend or "__auto", "refId": ref}
    if instant:
        t["instant"] = True
        t["range"] = False
    if fmt:
        t["format"] = fmt
    return t


def targets(*pairs):
    """targets(("expr", "legend"), ...) with refIds A, B, C..."""
    return [target(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(pairs)]


class Layout:
    """Places panels left to right in a 24-column grid, wrapping lines."""

    def __init__(self):
        self.panels = []
        self.x = 0
        self.y = 0
        self.line_height = 0
        self.next_id = 1

    def add(self, panel, w, h):
        if self.x + w > 24:
            self.x = 0
            self.y += self.line_height
            self.line_height = 0
        panel["id"] = self.next_id
        self.next_id += 1
        panel["gridPos"] = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.line_height = max(self.line_height, h)
        self.panels.append(panel)

    def row(self, title):
        if self.x != 0:
            self.x = 0
            self.y += self.line_height
            self.line_height = 0
        self.add({"type": "row", "title": title, "collapsed": False, "panels": []}, 24, 1)
        self.x = 0
        self.y += 1
        self.line_height = 0

    def timeseries(self, title, description, tgts, unit="short", w=12, h=8, stack=False, max_value=None):
        custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
                  "spanNulls": False}
        if stack:
            custom["stacking"] = {"mode": "normal", "group": "A"}
            custom["fillOpacity"] = 40
        defaults = {"unit": unit, "custom": custom}
        if max_value is not None:
            defaults["max"] = max_value
            defaults["min"] = 0
        self.add({
            "type": "timeseries",
            "title": title,
            "description": description,
            "datasource": DATASOURCE,
            "targets": tgts,
            "fieldConfig": {"defaults": defaults, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}},
        }, w, h)

    def stat(self, title, description, expr, unit="short", w=4, h=4, thresholds=None, decimals=None):
        steps = [{"color": "green", "value": None}]
        for value, color in thresholds or []:
            steps.append({"color": color, "value": value})
        defaults = {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}}
        if decimals is not None:
            defaults["decimals"] = decimals
        self.add({
            "type": "stat",
            "title": title,
            "description": description,
            "datasource": DATASOURCE,
            "targets": [target(expr, "", "A", instant=True)],
            "fieldConfig": {"defaults": defaults, "overrides": []},
            "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "graphMode": "none", "justifyMode": "auto",
                        "textMode": "auto", "orientation": "auto"},
        }, w, h)

    def state_timeline(self, title, description, expr, legend, mappings, w=12, h=8):
        self.add({
            "type": "state-timeline",
            "title": title,
            "description": description,
            "datasource": DATASOURCE,
            "targets": [target(expr, legend)],
            "fieldConfig": {"defaults": {"mappings": mappings, "custom": {"fillOpacity": 70, "lineWidth": 0},
                                         "thresholds": {"mode": "absolute",
                                                        "steps": [{"color": "green", "value": None}]}},
                            "overrides": []},
            "options": {"showValue": "auto", "mergeValues": True, "rowHeight": 0.9,
                        "legend": {"displayMode": "list", "placement": "bottom", "showLegend": False}},
        }, w, h)

    def table(self, title, description, expr, w=24, h=7, exclude=()):
        self.add({
            "type": "table",
            "title": title,
            "description": description,
            "datasource": DATASOURCE,
            "targets": [target(expr, "", "A", instant=True, fmt="table")],
            "fieldConfig": {"defaults": {}, "overrides": []},
            "options": {"showHeader": True},
            "transformations": [{"id": "organize", "options": {
                "excludeByName": {name: True for name in ("Time", "Value", "__name__") + tuple(exclude)}}}],
        }, w, h)


def datasource_variable():
    return {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1, "regex": "", "options": [], "includeAll": False,
            "multi": False, "skipUrlSync": False}


def query_variable(name, label, query):
    return {"name": name, "label": label, "type": "query", "datasource": DATASOURCE,
            "definition": query, "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
            "current": {}, "hide": 0, "refresh": 2, "regex": "", "sort": 1, "options": [],
            "includeAll": True, "allValue": ".*", "multi": True, "skipUrlSync": False}


def dashboard(uid, title, description, layout, variables):
    return {
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
            "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
            "type": "dashboard"}]},
        "description": description,
        "editable": True,
        "fiscalYearStartMonth": 0,
        "graphTooltip": 1,
        "id": None,
        "links": [{"title": "zkfarm", "type": "dashboards", "tags": ["zkfarm"], "asDropdown": True,
                   "includeVars": True, "keepTime": True}],
        "liveNow": False,
        "panels": layout.panels,
        "refresh": "30s",
        "schemaVersion": 38,
        "style": "dark",
        "tags": ["zkfarm"],
        "templating": {"list": [datasource_variable()] + variables},
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "timezone": "",
        "title": title,
        "uid": uid,
        "version": 1,
        "weekStart": "",
    }


def quantiles(metric, selector, by, title_legend):
    """p50/p95/p99 of a histogram, aggregated by `by` (plus le)."""
    grouping = "le" + (", " + by if by else "")
    pairs = []
    for q in ("0.5", "0.95", "0.99"):
        expr = (f"histogram_quantile({q}, sum by ({grouping}) "
                f"(rate({metric}_bucket{selector}[{RATE}])))")
        pairs.append((expr, title_legend.format(q="p" + str(int(float(q) * 100)))))
    return targets(*pairs)


# ---- farm overview --------------------------------------------------------------


def farm_overview():
    L = Layout()
    prio = '{priority=~"$priority"}'
    L.row("Now")
    L.stat("Proofs / s", "Partition proofs verified per second, whole farm (5 minute rate).",
           "sum(rate(zkfarm_partitions_verified_total[5m]))", unit="short", decimals=2)
    L.stat("Jobs done (1 h)", "Jobs completed in the last hour.",
           "sum(increase(zkfarm_jobs_completed_total[1h]))", decimals=0)
    L.stat("Jobs failed (1 h)", "Jobs failed or cancelled in the last hour.",
           "sum(increase(zkfarm_jobs_failed_total[1h]))", decimals=0, thresholds=[(1, "orange")])
    L.stat("Queued jobs", "Jobs waiting in the Redis queues (all priorities and tenants).",
           "sum(max by (priority, tenant) (zkfarm_queue_depth))", decimals=0, thresholds=[(100, "orange")])
    L.stat("Workers connected", "Workers with a live session at some coordinator.",
           "count(max by (worker) (zkfarm_worker_connected) == 1)", decimals=0)
    L.stat("Quarantined", "Workers in quarantine (no tasks until cleared).",
           "sum(max by (worker) (zkfarm_worker_quarantined))", decimals=0, thresholds=[(1, "red")])

    L.row("Throughput")
    L.timeseries("Partitions per second", "Results received, verified (= proofs delivered) and invalid.",
                 targets(("sum(rate(zkfarm_partitions_proved_total[%s]))" % RATE, "proved"),
                         ("sum(rate(zkfarm_partitions_verified_total[%s]))" % RATE, "verified"),
                         ("sum(rate(zkfarm_partitions_invalid_total[%s]))" % RATE, "invalid")))
    L.timeseries("Jobs per second", "Jobs taken in, completed and failed, by priority.",
                 targets(("sum by (priority) (rate(zkfarm_jobs_submitted_total%s[%s]))" % (prio, RATE),
                          "submitted {{priority}}"),
                         ("sum by (priority) (rate(zkfarm_jobs_completed_total%s[%s]))" % (prio, RATE),
                          "completed {{priority}}"),
                         ("sum by (priority) (rate(zkfarm_jobs_failed_total%s[%s]))" % (prio, RATE),
                          "failed {{priority}}")))
    L.timeseries("Retries and requeues per second",
                 "Partitions retried after a failed attempt (by reason) and requeued without one (worker died, "
                 "drained, coordinator restart).",
                 targets(("sum by (reason) (rate(zkfarm_partitions_retried_total[%s]))" % RATE,
                          "retried: {{reason}}"),
                         ("sum by (reason) (rate(zkfarm_partitions_requeued_total[%s]))" % RATE,
                          "requeued: {{reason}}")))
    L.timeseries("Verification time", "Wall time of one batch verification call, by curve.",
                 quantiles("zkfarm_verify_duration_seconds", "", "curve", "{q} {{curve}}"), unit="s")

    L.row("Latency")
    L.timeseries("Job latency (submission to done)",
                 "End-to-end latency of completed jobs of the selected priorities. Objectives: critical 99% "
                 "within 20 s, high/normal 95% within 30 min.",
                 quantiles("zkfarm_job_latency_seconds", prio, "", "{q}"), unit="s")
    L.timeseries("Job latency p95 by priority", "95th percentile of end-to-end latency per priority.",
                 targets(("histogram_quantile(0.95, sum by (le, priority) "
                          "(rate(zkfarm_job_latency_seconds_bucket%s[%s])))" % (prio, RATE), "{{priority}}")),
                 unit="s")
    L.timeseries("Queue wait p95", "Submission to intake (job queue wait) by priority.",
                 targets(("histogram_quantile(0.95, sum by (le, priority) "
                          "(rate(zkfarm_job_queue_wait_seconds_bucket%s[%s])))" % (prio, RATE), "{{priority}}")),
                 unit="s")
    L.timeseries("Partition dispatch wait p95",
                 "From a partition becoming pending to its dispatch: how long work waits for a free device.",
                 targets(("histogram_quantile(0.95, sum by (le, priority) "
                          "(rate(zkfarm_partition_dispatch_wait_seconds_bucket%s[%s])))" % (prio, RATE),
                          "{{priority}}")),
                 unit="s")

    L.row("Queues")
    L.timeseries("Queue depth", "Jobs waiting in each priority's Redis queues (max over coordinators: they share "
                 "them; then summed over tenants).",
                 targets(("sum by (priority) (max by (priority, tenant) (zkfarm_queue_depth%s))" % prio,
                          "{{priority}}")), stack=True)
    L.timeseries("Partitions pending and in flight",
                 "Pending: waiting for a worker slot, by priority. In flight: dispatched, not yet answered.",
                 targets(("sum by (priority) (zkfarm_partitions_pending%s)" % prio, "pending {{priority}}"),
                         ("sum(zkfarm_partitions_in_flight)", "in flight")))
    L.timeseries("Active jobs", "Jobs held by the coordinators, by priority.",
                 targets(("sum by (priority) (zkfarm_jobs_active%s)" % prio, "{{priority}}")), stack=True)

    # One row per farm, a series per tenant ("default": the farm's own
    # namespace, every job of a farm without tenants).
    ten = '{tenant=~"$tenant"}'
    L.row("Tenants")
    L.timeseries("Proofs per second by tenant", "Partition proofs verified per second, per tenant.",
                 targets(("sum by (tenant) (rate(zkfarm_partitions_verified_total%s[%s]))" % (ten, RATE),
                          "{{tenant}}")), stack=True, w=8)
    L.timeseries("Jobs per second by tenant", "Jobs completed and failed per second, per tenant.",
                 targets(("sum by (tenant) (rate(zkfarm_jobs_completed_total%s[%s]))" % (ten, RATE),
                          "completed {{tenant}}"),
                         ("sum by (tenant) (rate(zkfarm_jobs_failed_total%s[%s]))" % (ten, RATE),
                          "failed {{tenant}}")), w=8)
    L.timeseries("Queue depth by tenant", "Jobs waiting in each tenant's Redis queues, all priorities.",
                 targets(("sum by (tenant) (max by (priority, tenant) (zkfarm_queue_depth%s))" % ten,
                          "{{tenant}}")), stack=True, w=8)
    L.timeseries("Job latency p95 by tenant", "95th percentile of end-to-end latency of completed jobs, per tenant.",
                 targets(("histogram_quantile(0.95, sum by (le, tenant) "
                          "(rate(zkfarm_job_latency_seconds_bucket%s[%s])))" % (ten, RATE), "{{tenant}}")),
                 unit="s", w=8)
    L.timeseries("Partition dispatch wait p95 by tenant",
                 "How long each tenant's partitions wait for a free device (the fair share at work).",
                 targets(("histogram_quantile(0.95, sum by (le, tenant) "
                          "(rate(zkfarm_partition_dispatch_wait_seconds_bucket%s[%s])))" % (ten, RATE),
                          "{{tenant}}")),
                 unit="s", w=8)
    L.timeseries("Retries and requeues by tenant", "Partitions retried and requeued per second, per tenant.",
                 targets(("sum by (tenant) (rate(zkfarm_partitions_retried_total%s[%s]))" % (ten, RATE),
                          "retried {{tenant}}"),
                         ("sum by (tenant) (rate(zkfarm_partitions_requeued_total%s[%s]))" % (ten, RATE),
                          "requeued {{tenant}}")), w=8)

    L.row("Failures")
    L.timeseries("Job failures by code", "Jobs failed per second, by error code.",
                 targets(("sum by (code) (rate(zkfarm_jobs_failed_total%s[%s]))" % (prio, RATE), "{{code}}")),
                 stack=True)
    L.timeseries("Redis errors", "Failed Redis calls per second, by process.",
                 targets(("sum by (job, instance) (rate(zkfarm_redis_errors_total[%s]))" % RATE,
                          "{{job}} {{instance}}")))
    L.timeseries("Heartbeat misses and worker deaths",
                 "Heartbeats the coordinators missed from workers, and workers declared dead.",
                 targets(("sum by (worker) (rate(zkfarm_worker_heartbeat_misses_total[%s]))" % RATE,
                          "missed {{worker}}"),
                         ("sum by (worker) (increase(zkfarm_worker_deaths_total[%s]))" % RATE, "dead {{worker}}")))
    L.timeseries("Scrape targets up", "1 when Prometheus could scrape the process.",
                 targets(('sum by (job) (up{job=~"zkfarm-.*"})', "{{job}} up"),
                         ('count by (job) (up{job=~"zkfarm-.*"})', "{{job}} total")))

    return dashboard("zkfarm-overview", "zkfarm / Farm overview",
                     "Throughput, latency, queues and failures of the whole proving farm.", L,
                     [query_variable("priority", "Priority", "label_values(zkfarm_queue_depth, priority)"),
                      query_variable("tenant", "Tenant", "label_values(zkfarm_queue_depth, tenant)")])


# ---- GPUs ---------------------------------------------------------------------


def gpus():
    L = Layout()
    w = '{worker=~"$worker"}'
    L.row("Now")
    L.stat("Devices", "Worker processes (one per device) reporting.", "count(zkfarm_device_info%s)" % w,
           decimals=0)
    L.stat("Busy", "Average busy fraction of the selected devices (10 minute rate).",
           "avg(rate(zkfarm_device_busy_seconds_total%s[10m]))" % w, unit="percentunit", decimals=0)
    L.stat("Proofs / s", "Proofs produced per second by the selected devices (5 minute rate).",
           "sum(rate(zkfarm_device_proofs_total%s[5m]))" % w, decimals=2)
    L.stat("Task errors (1 h)", "Tasks answered with an error in the last hour.",
           "sum(increase(zkfarm_device_task_errors_total%s[1h]))" % w, decimals=0, thresholds=[(1, "orange")])
    L.stat("Faults (1 h)", "Faults charged by the coordinators in the last hour.",
           "sum(increase(zkfarm_worker_faults_total%s[1h]))" % w, decimals=0, thresholds=[(1, "orange")])
    L.stat("Quarantined", "Selected workers in quarantine.",
           "sum(max by (worker) (zkfarm_worker_quarantined%s))" % w, decimals=0, thresholds=[(1, "red")])

    L.row("Throughput and utilization")
    L.timeseries("Proofs per second per device", "Proofs produced by each device.",
                 targets(("sum by (worker) (rate(zkfarm_device_proofs_total%s[%s]))" % (w, RATE), "{{worker}}")))
    L.timeseries("Busy fraction per device",
                 "Fraction of time each device had at least one task in progress.",
                 targets(("rate(zkfarm_device_busy_seconds_total%s[%s])" % (w, RATE), "{{worker}}")),
                 unit="percentunit", max_value=1)
    L.timeseries("Tasks in progress", "Tasks being proved, against the slots (credits) each worker offers.",
                 targets(("zkfarm_device_tasks_in_progress%s" % w, "{{worker}}"),
                         ("zkfarm_device_slots%s" % w, "slots {{worker}}")))
    L.timeseries("Where prover time goes", "Seconds per second spent in each stage, all selected devices.",
                 targets(("sum by (stage) (rate(zkfarm_prove_stage_duration_seconds_sum%s[%s]))" % (w, RATE),
                          "{{stage}}")),
                 unit="s", stack=True)
    L.timeseries("Stage time p95", "95th percentile of each prover stage per partition.",
                 targets(("histogram_quantile(0.95, sum by (le, stage) "
                          "(rate(zkfarm_prove_stage_duration_seconds_bucket%s[%s])))" % (w, RATE), "{{stage}}")),
                 unit="s")
    L.timeseries("Prove time per device (p50)", "Median total prover time per partition, by device.",
                 targets(("histogram_quantile(0.5, sum by (le, worker) "
                          "(rate(zkfarm_prove_duration_seconds_bucket%s[%s])))" % (w, RATE), "{{worker}}")),
                 unit="s")

    L.row("Witness generation (input partitions)")
    L.timeseries("Witness generator pool busy fraction",
                 "Runs in progress over pool size (--witgen-workers), per worker: near 1 means input "
                 "partitions wait for the pool, not the device.",
                 targets(("rate(zkfarm_witgen_busy_seconds_total%s[%s]) / zkfarm_witgen_workers%s" % (w, RATE, w),
                          "{{worker}}")),
                 unit="percentunit", max_value=1)
    L.timeseries("Partitions waiting for witness generation",
                 "Input partitions a worker holds that wait for a free generator, and runs in progress.",
                 targets(("zkfarm_witgen_queue_depth%s" % w, "waiting {{worker}}"),
                         ("zkfarm_witgen_running%s" % w, "running {{worker}}")))
    L.timeseries("Witness generation against prove time (p50)",
                 "Median witness generator run and median proof per partition: generation overlaps proving "
                 "while it stays below the prove time times the pool size.",
                 targets(("histogram_quantile(0.5, sum by (le) (rate(zkfarm_witgen_duration_seconds_bucket%s[%s])))"
                          % (w, RATE), "witness generation"),
                         ("histogram_quantile(0.5, sum by (le) (rate(zkfarm_prove_duration_seconds_bucket%s[%s])))"
                          % (w, RATE), "prove")),
                 unit="s")
    L.timeseries("Witness generator failures by code",
                 "Runs that failed per second: badInput (the input was refused, crashed, timed out or hit a "
                 "limit), badCircuit (the generator is missing or does not match its hashes).",
                 targets(("sum by (worker, code) (rate(zkfarm_witgen_failures_total%s[%s]))" % (w, RATE),
                          "{{worker}} {{code}}")))

    L.row("Memory")
    L.timeseries("Device memory used", "Device memory in use (CPU backend: resident set).",
                 targets(("zkfarm_device_memory_used_bytes%s" % w, "{{worker}}")), unit="bytes")
    L.timeseries("Device memory used fraction", "Used over total device memory.",
                 targets(("zkfarm_device_memory_used_bytes%s / zkfarm_device_memory_total_bytes%s" % (w, w),
                          "{{worker}}")),
                 unit="percentunit", max_value=1)

    L.row("Faults and health")
    L.timeseries("Task errors by code", "Tasks a worker answered with an error, per second, by code.",
                 targets(("sum by (worker, code) (rate(zkfarm_device_task_errors_total%s[%s]))" % (w, RATE),
                          "{{worker}} {{code}}")))
    L.timeseries("Faults and invalid proofs", "Faults charged per device, and proofs that failed verification.",
                 targets(("sum by (worker) (increase(zkfarm_worker_faults_total%s[%s]))" % (w, RATE),
                          "faults {{worker}}"),
                         ("sum by (worker) (increase(zkfarm_partitions_invalid_total%s[%s]))" % (w, RATE),
                          "invalid {{worker}}")))
    L.state_timeline("Quarantine", "Quarantine state of each worker (as the coordinators see it).",
                     "max by (worker) (zkfarm_worker_quarantined%s)" % w, "{{worker}}",
                     [{"type": "value", "options": {
                         "0": {"text": "in service", "color": "green", "index": 0},
                         "1": {"text": "quarantined", "color": "red", "index": 1}}}])
    L.state_timeline("Connection", "Whether each worker has a live session with a coordinator.",
                     "max by (worker) (zkfarm_worker_connected%s)" % w, "{{worker}}",
                     [{"type": "value", "options": {
                         "0": {"text": "disconnected", "color": "red", "index": 0},
                         "1": {"text": "connected", "color": "green", "index": 1}}}])
    L.timeseries("Heartbeat misses", "Missed heartbeats: coordinator-side (from the worker) and worker-side "
                 "(from the coordinator).",
                 targets(("sum by (worker) (rate(zkfarm_worker_heartbeat_misses_total%s[%s]))" % (w, RATE),
                          "coordinator missed {{worker}}"),
                         ("sum by (worker) (rate(zkfarm_coordinator_heartbeat_misses_total%s[%s]))" % (w, RATE),
                          "{{worker}} missed coordinator")))
    L.table("Devices", "Each worker's device, UUID and backend.", "zkfarm_device_info%s" % w, w=12, h=8,
            exclude=("job",))

    return dashboard("zkfarm-gpus", "zkfarm / GPUs",
                     "Per-device throughput, utilization, memory, faults and quarantine.", L,
                     [query_variable("worker", "Worker", "label_values(zkfarm_device_info, worker)")])


# ---- circuits ---------------------------------------------------------------------


def circuits():
    L = Layout()
    c = '{circuit=~"$circuit"}'
    hits = "sum by (circuit) (rate(zkfarm_circuit_cache_hits_total%s[%s]))" % (c, RATE)
    misses = "sum by (circuit) (rate(zkfarm_circuit_cache_misses_total%s[%s]))" % (c, RATE)
    L.row("Cache locality")
    L.stat("Cache hit ratio (1 h)", "Tasks whose circuit was already resident, over all tasks, last hour.",
           "sum(increase(zkfarm_circuit_cache_hits_total%s[1h])) / (sum(increase(zkfarm_circuit_cache_hits_total%s[1h]))"
           " + sum(increase(zkfarm_circuit_cache_misses_total%s[1h])))" % (c, c, c),
           unit="percentunit", decimals=1)
    L.stat("Circuit loads (1 h)", "Circuits loaded into a backend in the last hour.",
           "sum(increase(zkfarm_circuit_loads_total%s[1h]))" % c, decimals=0)
    L.stat("Failed loads (1 h)", "Circuit loads that failed in the last hour.",
           'sum(increase(zkfarm_circuit_loads_total{circuit=~"$circuit", result="error"}[1h]))', decimals=0,
           thresholds=[(1, "red")])
    L.stat("Resident circuits", "Circuits resident over all devices.", "sum(zkfarm_circuit_cache_resident)",
           decimals=0)
    L.stat("Evictions (1 h)", "Resident circuits evicted in the last hour (thrashing when high).",
           "sum(increase(zkfarm_circuit_cache_evictions_total[1h]))", decimals=0, thresholds=[(10, "orange")])
    L.stat("Circuits", "Circuits that had jobs since the coordinators started.",
           "count(count by (circuit) (zkfarm_jobs_submitted_total%s))" % c, decimals=0)
    L.timeseries("Cache hit ratio per circuit", "Fraction of tasks that found their circuit resident.",
                 targets(("%s / (%s + %s)" % (hits, hits, misses), "{{circuit}}")),
                 unit="percentunit", max_value=1)
    L.timeseries("Cache hit ratio per device", "Affinity scheduling at work: high is good.",
                 targets(("sum by (worker) (rate(zkfarm_circuit_cache_hits_total%s[%s])) / "
                          "(sum by (worker) (rate(zkfarm_circuit_cache_hits_total%s[%s])) + "
                          "sum by (worker) (rate(zkfarm_circuit_cache_misses_total%s[%s])))"
                          % (c, RATE, c, RATE, c, RATE), "{{worker}}")),
                 unit="percentunit", max_value=1)
    L.timeseries("Hits and misses per second", "Cache lookups per circuit.",
                 targets((hits, "hits {{circuit}}"), (misses, "misses {{circuit}}")))
    L.timeseries("Resident circuits and evictions", "Circuits resident per device, and evictions.",
                 targets(("zkfarm_circuit_cache_resident", "resident {{worker}}"),
                         ("sum by (worker) (increase(zkfarm_circuit_cache_evictions_total[%s]))" % RATE,
                          "evicted {{worker}}")))

    L.row("Loading")
    L.timeseries("Load time", "Time to load a circuit (copy to the local cache, checksum, upload), per circuit.",
                 targets(("histogram_quantile(0.5, sum by (le, circuit) "
                          "(rate(zkfarm_circuit_load_duration_seconds_bucket%s[%s])))" % (c, RATE),
                          "p50 {{circuit}}"),
                         ("histogram_quantile(0.95, sum by (le, circuit) "
                          "(rate(zkfarm_circuit_load_duration_seconds_bucket%s[%s])))" % (c, RATE),
                          "p95 {{circuit}}")),
                 unit="s")
    L.timeseries("Loads per second", "Circuit loads by circuit and result.",
                 targets(("sum by (circuit, result) (rate(zkfarm_circuit_loads_total%s[%s]))" % (c, RATE),
                          "{{circuit}} {{result}}")))

    L.row("Proving per circuit")
    L.timeseries("Prove time per partition", "Prover total per partition, by circuit.",
                 targets(("histogram_quantile(0.5, sum by (le, circuit) "
                          "(rate(zkfarm_prove_duration_seconds_bucket%s[%s])))" % (c, RATE), "p50 {{circuit}}"),
                         ("histogram_quantile(0.95, sum by (le, circuit) "
                          "(rate(zkfarm_prove_duration_seconds_bucket%s[%s])))" % (c, RATE), "p95 {{circuit}}")),
                 unit="s")
    L.timeseries("Proofs per second per circuit", "Partition proofs verified per circuit.",
                 targets(("sum by (circuit) (rate(zkfarm_partitions_verified_total%s[%s]))" % (c, RATE),
                          "{{circuit}}")))
    L.timeseries("Jobs per circuit", "Jobs taken in, completed and failed per second.",
                 targets(("sum by (circuit) (rate(zkfarm_jobs_submitted_total%s[%s]))" % (c, RATE),
                          "submitted {{circuit}}"),
                         ("sum by (circuit) (rate(zkfarm_jobs_completed_total%s[%s]))" % (c, RATE),
                          "completed {{circuit}}"),
                         ("sum by (circuit) (rate(zkfarm_jobs_failed_total%s[%s]))" % (c, RATE),
                          "failed {{circuit}}")))
    L.timeseries("Job latency p95 per circuit", "End-to-end latency of completed jobs, by circuit.",
                 targets(("histogram_quantile(0.95, sum by (le, circuit) "
                          "(rate(zkfarm_job_latency_seconds_bucket%s[%s])))" % (c, RATE), "{{circuit}}")),
                 unit="s")

    return dashboard("zkfarm-circuits", "zkfarm / Circuits",
                     "Circuit cache locality, load times and per-circuit proving.", L,
                     [query_variable("circuit", "Circuit", "label_values(zkfarm_jobs_submitted_total, circuit)")])


DASHBOARDS = {"farm-overview.json": farm_overview, "gpus.json": gpus, "circuits.json": circuits}


def render(build):
    return json.dumps(build(), indent=2, sort_keys=False) + "\n"


def main(argv):
    check = "--check" in argv[1:]
    stale = []
    for name, build in DASHBOARDS.items():
        path = os.path.join(OUT_DIR, name)
        text = render(build)
        current = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if current == text:
            continue
        if check:
            stale.append(name)
        else:
            os.makedirs(OUT_DIR, exist_ok=True)
            with open(path, "w", encoding="utf-8") as out:
                out.write(text)
            print("wrote", os.path.relpath(path))
    if stale:
        print("out of date (run monitoring/grafana/dashboards.py):", " ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
