// status.js -- renders the zkfarm status page from the coordinator's JSON API
// (/api/v1/jobs, workers, circuits, stats, tenants) and refreshes it every
// few seconds (?refresh=SECONDS, default 5). The API answers as the viewer
// may see (the admin: the whole farm; a tenant: its own jobs, circuits and
// figures, and of the workers only the farm's capacity); the page shows
// the tenant columns and the tenants table once the farm has tenants.
//
// Every value from the API goes into the page as text (textContent, SVG
// attributes): no markup is ever built from data, so a job id or a worker's
// host name containing HTML shows as the characters it is.
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
const params = new URLSearchParams(window.location.search);
const refreshSeconds = Math.max(1, Number(params.get('refresh')) || 5);

// An element with attributes and children (strings become text nodes).
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value !== undefined && value !== null) node.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    node.appendChild(typeof child === 'string' || typeof child === 'number'
      ? document.createTextNode(String(child)) : child);
  }
  return node;
}

function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function seconds(value) {
  if (value === null || value === undefined || !isFinite(value)) return '-';
  if (value < 1) return (value * 1000).toFixed(0) + ' ms';
  if (value < 120) return value.toFixed(1) + ' s';
  if (value < 7200) return (value / 60).toFixed(1) + ' min';
  return (value / 3600).toFixed(1) + ' h';
}

function ago(now, then) {
  if (then === null || then === undefined) return '-';
  return seconds(Math.max(0, now - then)) + ' ago';
}

function shortId(id) {
  return typeof id === 'string' && id.length > 16 ? id.slice(0, 16) + '...' : String(id === null ? '-' : id);
}

function bytes(n) {
  if (n === null || n === undefined) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; ++i; }
  return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
}

function fillTable(id, rows, columns, emptyText) {
  const body = document.querySelector('#' + id + ' tbody');
  body.replaceChildren();
  if (rows.length === 0) {
    body.appendChild(el('tr', {}, el('td', { class: 'empty', colspan: columns }, emptyText)));
    return;
  }
  for (const row of rows) body.appendChild(row);
}

function card(label, value, id) {
  return el('div', { class: 'card', id: id }, el('div', { class: 'value' }, value), el('div', { class: 'label' }, label));
}

// Whether the page shows tenants: a tenant's view, or an admin's of a farm
// with tenants registered (the default tenant is always listed).
let tenantsOn = false;

// A row's last cell, the job's tenant, while tenantsOn.
function tenantCell(j) {
  return tenantsOn ? el('td', { class: 'tenant' }, j.tenant) : null;
}

function renderSummary(jobs, workers, stats) {
  const queued = Object.values(jobs.queued).reduce((sum, q) => sum + q.count, 0);
  // The admin counts the workers as before (alive, quarantined or not); a
  // tenant gets the farm's capacity (alive and not quarantined) only.
  const alive = workers.viewer.role === 'admin'
    ? workers.workers.filter((w) => w.state === 'alive').length : workers.capacity.alive;
  const hour = stats.last_hour;
  document.getElementById('summary').replaceChildren(
    card('workers alive', String(alive) + ' / ' + workers.capacity.workers, 'card-workers'),
    card('jobs queued', String(queued), 'card-queued'),
    card('jobs running', String(jobs.running.length), 'card-running'),
    card('partitions proved, last hour', String(hour.partitions), 'card-partitions'),
    card('jobs done, last hour', String(hour.jobs_done), 'card-done'),
    card('jobs failed, last hour', String(hour.jobs_failed), 'card-failed'),
    card('average job latency, last hour', seconds(hour.latency_avg_s), 'card-latency'));
}

// A bar/dot chart over the 60 minutes of stats.minutes.
function renderChart(id, minutes, series) {
  const chart = document.getElementById(id);
  chart.replaceChildren();
  const left = 44, right = 632, top = 10, bottom = 150;
  const width = (right - left) / minutes.length;
  let max = 0;
  for (const m of minutes) for (const s of series) max = Math.max(max, m[s.key] || 0);
  const scale = max > 0 ? max * 1.1 : 1;
  const y = (v) => bottom - (v / scale) * (bottom - top);
  for (const fraction of [0.5, 1]) {
    const value = scale * fraction;
    chart.appendChild(svg('line', { class: 'grid', x1: left, x2: right, y1: y(value), y2: y(value) }));
    chart.appendChild(svg('text', { x: left - 4, y: y(value) + 3, 'text-anchor': 'end' },
      series[0].format(value)));
  }
  chart.appendChild(svg('line', { class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom }));
  chart.appendChild(svg('line', { class: 'axis', x1: left, x2: left, y1: top, y2: bottom }));
  chart.appendChild(svg('text', { x: left, y: bottom + 14 }, '-60 min'));
  chart.appendChild(svg('text', { x: (left + right) / 2, y: bottom + 14, 'text-anchor': 'middle' }, '-30 min'));
  chart.appendChild(svg('text', { x: right, y: bottom + 14, 'text-anchor': 'end' }, 'now'));
  for (const s of series) {
    let total = 0;
    const points = [];
    minutes.forEach((m, i) => {
      const v = m[s.key];
      if (v === null || v === undefined) return;
      total += v;
      const x = left + i * width;
      const label = new Date(m.minute * 1000).toLocaleTimeString() + ': ' + s.format(v) + ' ' + s.name;
      if (s.kind === 'bar') {
        if (v <= 0) return;
        const bar = svg('rect', { class: 'bar', x: x + 1, y: y(v), width: Math.max(width - 2, 1), height: bottom - y(v) });
        bar.appendChild(svg('title', {}, label));
        chart.appendChild(bar);
      } else if (s.kind === 'line') {
        points.push((x + width / 2).toFixed(1) + ',' + y(v).toFixed(1));
      } else if (v > 0) {
        const dot = svg('circle', { class: s.className || 'dot', cx: x + width / 2, cy: y(v), r: 3 });
        dot.appendChild(svg('title', {}, label));
        chart.appendChild(dot);
      }
    });
    if (s.kind === 'line' && points.length > 0) {
      chart.appendChild(svg('polyline', { class: 'line', points: points.join(' ') }));
    }
    chart.setAttribute('data-' + s.key.replace(/_/g, '-'), String(total));
  }
}

function renderTenants(data) {
  const admin = data.viewer.role === 'admin';
  document.getElementById('tenants-section').hidden = !tenantsOn;
  document.querySelectorAll('.col-tenant').forEach((th) => { th.hidden = !tenantsOn; });
  document.querySelectorAll('.col-share').forEach((th) => { th.hidden = !admin; });
  const quota = (n) => (n ? String(n) : '-');
  fillTable('tenants', data.tenants.map((t) => el('tr', { 'data-tenant': t.name },
    el('td', { class: 'id' }, t.name),
    el('td', { class: 'num' }, String(t.weight)),
    el('td', { class: 'num' }, String(t.reserved_workers)),
    el('td', { class: 'num queued' }, String(t.queued)),
    el('td', { class: 'num running' }, String(t.running)),
    el('td', { class: 'num partitions' }, String(t.last_hour.partitions)),
    el('td', { class: 'num' }, seconds(t.last_hour.worker_seconds)),
    admin ? el('td', { class: 'num share' }, t.worker_share === null ? '-' : Math.round(t.worker_share * 100) + '%') : null,
    el('td', {}, 'queued ' + quota(t.max_queued_jobs) + ', active partitions ' + quota(t.max_active_partitions) +
      ', job bytes ' + quota(t.max_job_bytes)))), admin ? 9 : 8, 'no tenants');
}

function renderWorkers(data) {
  const now = data.time;
  // A tenant sees the farm's capacity only (no worker ids, hosts or counts).
  const tenant = data.viewer.role === 'tenant';
  document.getElementById('workers').hidden = tenant;
  const capacity = document.getElementById('capacity');
  capacity.hidden = !tenant;
  capacity.textContent = String(data.capacity.alive) + ' workers alive: ' +
    (Object.entries(data.capacity.devices).map(([model, n]) => n + ' x ' + model).join(', ') || 'none');
  const rows = data.workers.map((w) => el('tr', { 'data-worker': w.id },
    el('td', { class: 'id' }, w.id),
    el('td', {}, w.host),
    el('td', {}, w.device + (w.device_ordinal !== null && w.device_ordinal >= 0 ? ' #' + w.device_ordinal : ' (cpu)')),
    el('td', { class: 'state-' + w.state }, w.state),
    el('td', { class: 'num' }, w.busy === null ? '-' : Math.round(w.busy * 100) + '%'),
    el('td', { class: 'num proofs' }, String(w.proofs)),
    el('td', { class: 'num faults' }, String(w.faults)),
    el('td', { class: w.quarantined ? 'yes' : '' }, w.quarantined ? 'yes' : 'no'),
    el('td', { class: 'mono' }, w.resident.map(shortId).join(', ') || '-'),
    el('td', {}, w.coordinator),
    el('td', {}, ago(now, w.last_seen))));
  fillTable('workers', rows, 11, 'no workers');
}

function renderJobs(data) {
  const now = data.time;
  document.getElementById('served-by').textContent = 'served by coordinator ' + data.served_by +
    (data.viewer.role === 'tenant' ? ' · tenant ' + data.viewer.tenant : '');
  const columns = tenantsOn ? 1 : 0;
  fillTable('jobs-running', data.running.map((j) => el('tr', { 'data-job': j.id },
    el('td', { class: 'id' }, j.id),
    el('td', {}, j.priority),
    el('td', {}, el('progress', { max: j.partitions || 1, value: j.proved || 0 })),
    el('td', { class: 'num' }, String(j.proved || 0) + ' / ' + String(j.partitions)),
    el('td', { class: 'mono' }, shortId(j.circuit)),
    el('td', {}, j.coordinator),
    el('td', {}, j.started_at ? seconds(now - j.started_at) : '-'),
    tenantCell(j))), 7 + columns, 'no running jobs');
  const queuedRows = Object.entries(data.queued).map(([priority, q]) => el('tr', { 'data-priority': priority },
    el('td', {}, priority),
    el('td', { class: 'num' }, String(q.count)),
    el('td', { class: 'id' }, q.jobs.map((j) => (tenantsOn ? j.tenant + ': ' : '') + shortId(j.id) + (j.partitions ? ' (' + j.partitions + ')' : '') +
      (j.submitted_at ? ', ' + ago(now, j.submitted_at) : '')).join('; ') || '-')));
  fillTable('jobs-queued', queuedRows, 3, '');
  fillTable('jobs-done', data.done.map((j) => el('tr', { 'data-job': j.id },
    el('td', { class: 'id' }, j.id),
    el('td', {}, j.priority),
    el('td', { class: 'num' }, String(j.partitions)),
    el('td', { class: 'num latency' }, seconds(j.latency_s)),
    el('td', { class: 'mono' }, shortId(j.circuit)),
    el('td', {}, ago(now, j.finished_at)),
    tenantCell(j))), 6 + columns, 'none in the recent list');
  // Failures come grouped by error code (the newest few of each): a line of
  // counts per code, then the jobs, newest first. No error text: it may
  // quote a witness reference; the code and the partition at fault are shown.
  const codes = document.getElementById('failed-codes');
  codes.replaceChildren(...data.failed_codes.map((c) => el('span', { class: 'code-count', 'data-code': c.code },
    el('span', { class: 'mono code' }, c.code),
    ' ' + (c.kept > c.shown ? c.shown + ' of the last ' + c.kept : String(c.shown)))));
  codes.hidden = data.failed_codes.length === 0;
  fillTable('jobs-failed', data.failed.map((j) => el('tr', { 'data-job': j.id },
    el('td', { class: 'id' }, j.id),
    el('td', { class: 'state-' + j.state }, j.state),
    el('td', { class: 'mono code' }, j.error_code),
    el('td', { class: 'num partition' }, j.error_partition === null ? '-' : String(j.error_partition)),
    el('td', { class: 'num' }, String(j.partitions)),
    el('td', {}, ago(now, j.finished_at)),
    tenantCell(j))), 6 + columns, 'none in the recent list');
}

function renderCircuits(data) {
  fillTable('circuits', data.circuits.map((c) => el('tr', { 'data-circuit': c.id },
    el('td', { class: 'id', title: c.id }, shortId(c.id)),
    el('td', {}, c.curve),
    el('td', { class: 'num' }, String(c.domain_size)),
    el('td', { class: 'num' }, String(c.num_vars)),
    el('td', { class: 'num' }, String(c.num_public)),
    el('td', { class: 'num' }, bytes(c.zkey_bytes)),
    el('td', { class: 'id' }, data.viewer.role === 'tenant' ? c.resident_count + ' workers'
      : c.resident_on.join(', ') || '-'))), 7, 'no circuits registered');
}

async function fetchJson(path) {
  // From the origin, never the page's own URL: a page opened as
  // http://user:token@host/ (basic auth, a tenant's token) has credentials
  // in its URL, which fetch() refuses; the browser sends the ones it holds
  // for the origin.
  const response = await fetch(new URL(path, window.location.origin), { cache: 'no-store', credentials: 'same-origin' });
  const body = await response.json();
  if (!response.ok) throw new Error(path + ': ' + (body.error || response.status));
  return body;
}

async function refresh() {
  const banner = document.getElementById('error');
  try {
    const [jobs, workers, circuits, stats, tenants] = await Promise.all(
      ['/api/v1/jobs', '/api/v1/workers', '/api/v1/circuits', '/api/v1/stats', '/api/v1/tenants'].map(fetchJson));
    tenantsOn = tenants.viewer.role === 'tenant' || tenants.tenants.length > 1;
    renderSummary(jobs, workers, stats);
    renderTenants(tenants);
    renderChart('chart-throughput', stats.minutes, [
      { key: 'partitions', name: 'partitions', kind: 'bar', format: (v) => v.toFixed(v < 10 ? 1 : 0) },
      { key: 'jobs_done', name: 'jobs done', kind: 'dot', format: (v) => v.toFixed(0) }]);
    renderChart('chart-latency', stats.minutes, [
      { key: 'latency_avg_s', name: 'average', kind: 'line', format: seconds },
      { key: 'latency_max_s', name: 'slowest', kind: 'dot', className: 'dot-max', format: seconds }]);
    renderWorkers(workers);
    renderJobs(jobs);
    renderCircuits(circuits);
    banner.hidden = true;
    document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString() +
      ' (every ' + refreshSeconds + ' s)';
    document.body.setAttribute('data-refreshes', String(Number(document.body.getAttribute('data-refreshes') || 0) + 1));
  } catch (error) {
    banner.textContent = 'Cannot refresh: ' + error.message;
    banner.hidden = false;
  }
  window.setTimeout(refresh, refreshSeconds * 1000);
}

refresh();
