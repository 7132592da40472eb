// The Ardea UI: one page, routed by the URL fragment, drawn from the
// daemon's event stream (GET /api/v1/events, one snapshot a second) and
// acting through its API. Each page builds its static parts (forms,
// buttons) once and refreshes only its live regions on each snapshot, so
// typing in a field is never interrupted.
import {
  esc, fmtNum, fmtMs, fmtDuration, fmtBytes, parseRoute, routeHash, filterSort,
  layout, edgePath, overlayValue, heat, instancesOf, sparkPoints, toBase64, formatLogLine, taskNames, byInstance,
} from './lib.js';

const API = '/api/v1';
const $ = (sel, root = document) => root.querySelector(sel);
const main = $('#main');

const ui = {
  route: parseRoute(location.hash),
  snap: null,
  es: null,
  sort: { key: 'name', desc: false },
  filter: '',
  overlay: 'backpressure',
  window: '10m',
  logTick: 0,
};

// ---- event stream -------------------------------------------------------

function connect() {
  if (ui.es) ui.es.close();
  const q = ui.route.topology ? `?topology=${encodeURIComponent(ui.route.topology)}` : '';
  const es = new EventSource(`${API}/events${q}`);
  ui.es = es;
  es.addEventListener('snapshot', (ev) => {
    ui.snap = JSON.parse(ev.data);
    $('#conn').textContent = `live · ${new Date(ui.snap.time * 1000).toLocaleTimeString()}`;
    refresh();
  });
  es.onerror = () => { $('#conn').textContent = 'reconnecting…'; };
}

// ---- actions ------------------------------------------------------------

function toast(msg, isErr) {
  const d = document.createElement('div');
  d.textContent = msg;
  if (isErr) d.className = 'err';
  $('#toast').append(d);
  setTimeout(() => d.remove(), isErr ? 10000 : 4000);
}

function confirmAction(text) {
  const dlg = $('#confirm');
  $('#confirm-text').textContent = text;
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
    dlg.showModal();
    $('#confirm-cancel').focus();
  });
}

async function call(path, body, what) {
  try {
    const res = await fetch(API + path, {
      method: 'POST',
      headers: body ? { 'Content-Type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(data.message || data.error || `${res.status} ${res.statusText}`);
    toast(`${what}: done`);
    return data;
  } catch (e) {
    toast(`${what}: ${e.message}`, true);
    return null;
  }
}

const topoPath = (name) => `/topologies/${encodeURIComponent(name)}`;

async function act(action, extra = '') {
  const name = ui.route.topology;
  const text = {
    activate: `Activate ${name}? Its spouts start emitting.`,
    deactivate: `Deactivate ${name}? Its spouts stop emitting; tuples in flight finish.`,
    kill: `Kill ${name}? Every container stops and the topology is removed.`,
  }[action] ?? `${action} ${name}?`;
  if (!(await confirmAction(text))) return;
  const r = await call(`${topoPath(name)}/${action}${extra}`, null, `${action} ${name}`);
  if (r && action === 'kill') location.hash = '#/';
}

// ---- pages ---------------------------------------------------------------

function crumbs() {
  const r = ui.route;
  let h = '<a href="#/">Topologies</a>';
  if (r.topology) h += ` › <a href="${routeHash({ page: 'topology', topology: r.topology })}">${esc(r.topology)}</a>`;
  if (r.component) h += ` › <span>${esc(r.component)}</span>`;
  $('#crumbs').innerHTML = h;
}

function build() {
  crumbs();
  const r = ui.route;
  if (r.page === 'list') buildList();
  else if (r.page === 'topology') buildTopology();
  else buildComponent();
  refresh();
}

function refresh() {
  if (!ui.snap) return;
  const r = ui.route;
  if (r.page === 'list') refreshList();
  else if (r.page === 'topology') refreshTopology();
  else refreshComponent();
}

// List.

function buildList() {
  document.title = 'Topologies · Ardea';
  main.innerHTML = `
  <h1>Topologies</h1>
  <div class="bar">
    <label>Filter <input id="filter" type="search" placeholder="name, state or health" value="${esc(ui.filter)}"></label>
    <label>Sort by <select id="sort">
      ${['name', 'state', 'uptime', 'throughput', 'health'].map((k) => `<option ${k === ui.sort.key ? 'selected' : ''}>${k}</option>`).join('')}
    </select></label>
    <label><input id="desc" type="checkbox" ${ui.sort.desc ? 'checked' : ''}> descending</label>
  </div>
  <section><table aria-label="Topologies">
    <thead><tr><th>Name</th><th>State</th><th class="num">Uptime</th><th class="num">Throughput (tuples/s)</th><th>Health</th><th class="num hide-narrow">Containers</th><th class="num hide-narrow">Instances</th></tr></thead>
    <tbody id="rows"></tbody>
  </table></section>`;
  $('#filter').addEventListener('input', (e) => { ui.filter = e.target.value; refreshList(); });
  $('#sort').addEventListener('change', (e) => { ui.sort.key = e.target.value; refreshList(); });
  $('#desc').addEventListener('change', (e) => { ui.sort.desc = e.target.checked; refreshList(); });
}

function refreshList() {
  const rows = filterSort(ui.snap.topologies, ui.filter, ui.sort.key, ui.sort.desc);
  $('#rows').innerHTML = rows.length ? rows.map((t) => `
    <tr data-topology="${esc(t.name)}">
      <td><a href="${routeHash({ page: 'topology', topology: t.name })}">${esc(t.name)}</a></td>
      <td><span class="badge ${esc(t.state.toLowerCase())}">${esc(t.state.toLowerCase())}</span></td>
      <td class="num">${fmtDuration(t.uptime)}</td>
      <td class="num" data-field="throughput">${fmtNum(t.throughput)}</td>
      <td><span class="badge ${esc(t.health)}">${esc(t.health)}</span></td>
      <td class="num hide-narrow">${t.containers}</td><td class="num hide-narrow">${t.instances}</td>
    </tr>`).join('') : '<tr><td colspan="7" class="muted">No topologies. Submit one with <code>ardea submit</code>.</td></tr>';
}

// Topology.

function buildTopology() {
  const name = ui.route.topology;
  document.title = `${name} · Ardea`;
  main.innerHTML = `
  <h1><span>${esc(name)}</span> <span id="state" class="badge"></span> <span id="uptime" class="muted"></span></h1>
  <p id="topo-error" class="err" role="alert"></p>
  <div class="bar" role="group" aria-label="Topology actions">
    <button id="activate" class="primary">Activate</button>
    <button id="deactivate">Deactivate</button>
    <button id="kill" class="danger">Kill</button>
  </div>
  <section class="graph" aria-labelledby="plan-h">
    <h2 id="plan-h">Logical plan</h2>
    <div class="bar"><label>Colour by <select id="overlay">
      <option value="backpressure">back pressure</option><option value="failures">failures</option><option value="capacity">capacity</option>
    </select></label><span class="muted">green: fine, red: bad. Edges: grouping · tuples/s.</span></div>
    <div id="graph"></div>
  </section>
  <section aria-labelledby="counters-h">
    <h2 id="counters-h">Components</h2>
    <div class="bar"><label>Window <select id="window">
      <option value="10m">10 minutes</option><option value="1h">1 hour</option><option value="3h">3 hours</option>
    </select></label></div>
    <table aria-label="Component counters"><thead><tr>
      <th>Component</th><th class="num">Emit/s</th><th class="num">Execute/s</th>
      <th class="num">Emitted</th><th class="num">Executed</th><th class="num">Acked</th><th class="num">Failed</th>
      <th class="num">Exec latency</th><th class="num">Process latency</th><th class="num">Complete latency</th>
      <th class="num hide-narrow">Exec latency (window)</th>
      <th class="num">Back pressure</th><th class="num">Capacity</th><th class="num">Exceptions</th>
    </tr></thead><tbody id="counters"></tbody></table>
  </section>
  <section aria-labelledby="charts-h"><h2 id="charts-h">Last 10 minutes</h2><div class="grid" id="charts"></div></section>
  <section aria-labelledby="phys-h"><h2 id="phys-h">Physical plan</h2><div id="physical"></div></section>
  <section aria-labelledby="exc-h"><h2 id="exc-h">Exceptions</h2><div id="exceptions"></div></section>`;
  $('#activate').onclick = () => act('activate');
  $('#deactivate').onclick = () => act('deactivate');
  $('#kill').onclick = () => act('kill');
  $('#overlay').value = ui.overlay;
  $('#overlay').onchange = (e) => { ui.overlay = e.target.value; refreshTopology(); };
  $('#window').value = ui.window;
  $('#window').onchange = (e) => { ui.window = e.target.value; refreshTopology(); };
  $('#physical').addEventListener('click', async (e) => {
    const b = e.target.closest('button[data-restart]');
    if (!b) return;
    const c = b.dataset.restart;
    if (await confirmAction(`Restart container ${c} of ${name}? Its instances stop and start again.`)) {
      await call(`${topoPath(name)}/restart?container=${c}`, null, `restart container ${c}`);
    }
  });
}

function topo() {
  const s = ui.snap;
  const err = $('#topo-error');
  if (err) err.textContent = s.error && !s.topology ? s.error : '';
  return s.topology;
}

function refreshTopology() {
  const t = topo();
  if (!t) return;
  const state = t.info.state.toLowerCase();
  $('#state').textContent = state;
  $('#state').className = `badge ${state}`;
  $('#uptime').textContent = t.info.started ? `up ${fmtDuration((ui.snap.time * 1000 - Date.parse(t.info.started)) / 1000)} · plan r${t.info.plan_revision} · ${t.info.reliability}` : '';
  $('#activate').disabled = state === 'running';
  $('#deactivate').disabled = state !== 'running';
  $('#graph').innerHTML = graphSVG(t);
  $('#counters').innerHTML = t.components.map((c) => {
    const w = c.windows?.[ui.window] ?? {};
    return `<tr data-component="${esc(c.name)}">
      <td><a href="${routeHash({ page: 'component', topology: ui.route.topology, component: c.name })}">${esc(c.name)}</a></td>
      <td class="num" data-field="emit-rate">${fmtNum(c.rates.emit)}</td><td class="num" data-field="execute-rate">${fmtNum(c.rates.execute)}</td>
      <td class="num">${fmtNum(w.emit)}</td><td class="num">${fmtNum(w.execute)}</td><td class="num">${fmtNum(w.ack)}</td><td class="num">${fmtNum(w.fail)}</td>
      <td class="num">${fmtMs(c.latency.execute)}</td><td class="num">${fmtMs(c.latency.process)}</td><td class="num">${fmtMs(c.latency.complete)}</td>
      <td class="num hide-narrow">${fmtMs(w.execute_latency_ms ?? (c.kind === 'spout' ? w.complete_latency_ms : undefined))}</td>
      <td class="num">${(c.back_pressure * 100).toFixed(1)}%</td><td class="num">${c.capacity.toFixed(2)}</td>
      <td class="num" data-field="exceptions">${c.exceptions}</td></tr>`;
  }).join('');
  $('#charts').innerHTML = t.components.map((c) => chart(c, t.series[c.name])).join('');
  $('#physical').innerHTML = physicalTable(t, null);
  $('#exceptions').innerHTML = exceptionTable(t.exceptions);
}

function graphSVG(t) {
  const L = layout(t.components, t.edges);
  const { w, h } = L;
  const edges = t.edges.map((e) => {
    const p = edgePath(L.nodes[e.from], L.nodes[e.to], w, h);
    if (!p) return '';
    return `<g class="edge" data-from="${esc(e.from)}" data-to="${esc(e.to)}"><path d="${p.d}" marker-end="url(#arrow)"/>
      <text x="${p.lx}" y="${p.ly}" text-anchor="middle">${esc(e.grouping)} · ${fmtNum(e.rate)}/s</text></g>`;
  }).join('');
  const nodes = t.components.map((c) => {
    const n = L.nodes[c.name];
    const rate = c.kind === 'spout' ? c.rates.emit : c.rates.execute;
    const ver = c.version ? ' ' + c.version.slice(0, 8) : '';
    const href = routeHash({ page: 'component', topology: ui.route.topology, component: c.name });
    return `<a href="${href}" class="node${c.exceptions ? ' failing' : ''}" data-component="${esc(c.name)}" data-version="${esc(c.version || '')}" data-parallelism="${c.parallelism}"
        aria-label="${esc(c.name)}: ${esc(c.kind)}, ${fmtNum(rate)} tuples per second">
      <rect x="${n.x}" y="${n.y}" width="${w}" height="${h}" fill="${heat(overlayValue(c, ui.overlay))}"/>
      <text class="title" x="${n.x + 8}" y="${n.y + 18}">${esc(c.name)} ×${c.parallelism}</text>
      <text x="${n.x + 8}" y="${n.y + 36}">${esc(c.kind)} · ${esc(c.language)}${esc(ver)}</text>
      <text x="${n.x + 8}" y="${n.y + 54}" data-field="rate">${fmtNum(rate)}/s${c.exceptions ? ` · ${c.exceptions} exc` : ''}</text>
      <text x="${n.x + 8}" y="${n.y + 70}" class="muted">bp ${(c.back_pressure * 100).toFixed(0)}% · cap ${c.capacity.toFixed(2)}</text>
    </a>`;
  }).join('');
  return `<svg role="img" aria-label="Logical plan of ${esc(ui.route.topology)}" width="${L.width}" height="${L.height + 20}" viewBox="0 0 ${L.width} ${L.height + 20}">
    <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8c959f"/></marker></defs>
    ${edges}${nodes}</svg>`;
}

function chart(c, s) {
  if (!s) return '';
  const W = 300, H = 80;
  return `<div class="chart" data-component="${esc(c.name)}"><div><b>${esc(c.name)}</b></div>
    <svg viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" aria-label="${esc(c.name)} throughput and latency">
      <polyline points="${sparkPoints(s.throughput, W, H)}" stroke="#0b5cad"/>
      <polyline points="${sparkPoints(s.latency_ms, W, H)}" stroke="#b3261e" stroke-dasharray="3 2"/>
    </svg>
    <div class="legend"><span style="color:#0b5cad">throughput, now ${fmtNum(s.throughput.at(-1))}/s (max ${fmtNum(Math.max(...s.throughput))})</span>
    <span style="color:#b3261e">latency, max ${fmtMs(Math.max(...s.latency_ms))}</span></div></div>`;
}

function physicalTable(t, component) {
  const cs = t.physical?.containers ?? [];
  if (!cs.length) return `<p class="muted">${esc(t.errors?.physical ?? 'no containers')}</p>`;
  const insts = {};
  for (const c of t.components) for (const [name, m] of Object.entries(c.instances ?? {})) insts[name] = m;
  return `<table aria-label="Containers and instances"><thead><tr>
    <th>Container</th><th class="num">PID</th><th>Process</th><th class="num">CPU</th><th class="num">Memory</th><th class="num">Restarts</th>
    <th>Instance</th><th>State</th><th class="num">Wasm pages</th><th class="num">Execute/s</th><th></th></tr></thead><tbody>
    ${cs.map((c) => {
      const host = t.hosts?.[`container-${c.id}`] ?? {};
      const list = (c.instances ?? []).filter((i) => !component || i.name.split('/')[0] === component);
      if (component && !list.length) return '';
      const rows = list.length ? list : [{ name: '–', state: '' }];
      return rows.map((i, k) => `<tr data-container="${c.id}" data-instance="${esc(i.name)}">
        ${k === 0 ? `<td rowspan="${rows.length}">${c.id}</td><td class="num" rowspan="${rows.length}">${c.pid || '–'}</td>
          <td rowspan="${rows.length}">${esc(c.process)} / ${esc(c.host)}${c.last_error ? `<br><span class="err" title="${esc(c.last_error)}">${esc(firstLine(c.last_error, 80))}</span>` : ''}</td>
          <td class="num" rowspan="${rows.length}">${host.cpu != null ? (host.cpu * 100).toFixed(0) + '%' : '–'}</td>
          <td class="num" rowspan="${rows.length}">${fmtBytes(host.rss)}</td>
          <td class="num" rowspan="${rows.length}">${c.restarts}</td>` : ''}
        <td${i.task != null ? ` title="task ${i.task}"` : ''}>${esc(i.name)}</td><td>${esc(i.state)}</td>
        <td class="num">${fmtNum(insts[i.name]?.wasm_pages)}</td><td class="num">${fmtNum(insts[i.name]?.execute)}</td>
        ${k === 0 ? `<td rowspan="${rows.length}"><button data-restart="${c.id}" aria-label="Restart container ${c.id}">Restart</button></td>` : ''}
      </tr>`).join('');
    }).join('')}</tbody></table>`;
}

function exceptionTable(list) {
  if (!list?.length) return '<p class="muted">No exceptions.</p>';
  return `<table aria-label="Exceptions"><thead><tr><th>Component</th><th class="num">Count</th><th>First seen</th><th>Last seen</th><th>Message</th></tr></thead><tbody>
    ${list.map((e) => `<tr data-component="${esc(e.component)}"><td${e.task >= 0 ? ` title="task ${e.task}"` : ''}>${esc(e.instance || e.component + (e.task >= 0 ? ` / task ${e.task}` : ''))}</td>
      <td class="num" data-field="count">${e.count}</td><td>${new Date(e.first).toLocaleString()}</td><td>${new Date(e.last).toLocaleString()}</td>
      <td class="msg">${messageCell(e.message)}</td></tr>`).join('')}</tbody></table>`;
}

// firstLine is a message's first line, cut to max characters.
function firstLine(s, max) {
  const l = String(s).split('\n')[0];
  return l.length > max ? l.slice(0, max - 1) + '…' : l;
}

// messageCell shows a message's first line; the rest (a stack) folds.
function messageCell(m) {
  const i = m.indexOf('\n');
  if (i < 0) return esc(m);
  return `${esc(m.slice(0, i))}<details><summary>details</summary><pre>${esc(m.slice(i + 1))}</pre></details>`;
}

// Component.

function buildComponent() {
  const { topology: name, component: comp } = ui.route;
  document.title = `${comp} · ${name} · Ardea`;
  main.innerHTML = `
  <h1><span>${esc(comp)}</span> <span id="comp-info" class="muted"></span></h1>
  <p id="topo-error" class="err" role="alert"></p>
  <section aria-labelledby="ops-h"><h2 id="ops-h">Operate</h2>
    <form id="scale" class="bar"><label>Parallelism <input id="parallelism" type="number" min="1" max="1024" required></label>
      <button class="primary">Change parallelism</button></form>
    <form id="swap" class="bar"><label>New module (.wasm) <input id="module" type="file" accept=".wasm,application/wasm" required></label>
      <button class="primary">Swap module</button><button type="button" id="rollback">Roll back</button></form>
  </section>
  <section aria-labelledby="inst-h"><h2 id="inst-h">Instances</h2><div id="instances"></div></section>
  <section aria-labelledby="cphys-h"><h2 id="cphys-h">Where it runs</h2><div id="physical"></div></section>
  <section aria-labelledby="cexc-h"><h2 id="cexc-h">Exceptions</h2><div id="exceptions"></div></section>
  <section aria-labelledby="log-h"><h2 id="log-h">Log tail</h2>
    <div class="bar"><label>Instance <select id="log-of"><option value="">all instances</option></select></label></div>
    <pre class="log" id="log" tabindex="0" aria-live="off"></pre></section>`;
  $('#log-of').onchange = () => { ui.logTick = 0; tailLog(comp); };
  const pin = $('#parallelism');
  pin.dataset.fresh = '1';
  $('#scale').onsubmit = async (e) => {
    e.preventDefault();
    const n = Number(pin.value);
    if (!(await confirmAction(`Change the parallelism of ${comp} to ${n}? Its instances are replaced; keyed state moves with its keys.`))) return;
    await call(`${topoPath(name)}/update`, { parallelism: { [comp]: n } }, `parallelism of ${comp} → ${n}`);
    pin.dataset.fresh = '1';
  };
  $('#swap').onsubmit = async (e) => {
    e.preventDefault();
    const f = $('#module').files[0];
    if (!f) return;
    if (!(await confirmAction(`Swap ${comp} to ${f.name} (${fmtBytes(f.size)})? Its tasks switch without a restart and roll back if they fail.`))) return;
    const module = toBase64(await f.arrayBuffer());
    await call(`${topoPath(name)}/swap`, { component: comp, module, source: f.name, by: 'ui' }, `swap ${comp}`);
  };
  $('#rollback').onclick = async () => {
    if (!(await confirmAction(`Roll ${comp} back to its previous module version?`))) return;
    await call(`${topoPath(name)}/rollback?component=${encodeURIComponent(comp)}&by=ui`, null, `roll back ${comp}`);
  };
  ui.logTick = 0;
}

function refreshComponent() {
  const t = topo();
  if (!t) return;
  const c = t.components.find((x) => x.name === ui.route.component);
  if (!c) {
    $('#topo-error').textContent = `topology ${ui.route.topology} has no component ${ui.route.component}`;
    return;
  }
  $('#comp-info').textContent = `${c.kind} · ${c.language}${c.version ? ' ' + c.version.slice(0, 12) : ''} · ×${c.parallelism} · ${c.module}`;
  $('#comp-info').dataset.version = c.version || '';
  $('#swap').hidden = c.language === 'builtin'; // built-in components have no module to swap
  const pin = $('#parallelism');
  if (pin.dataset.fresh && document.activeElement !== pin) { pin.value = c.parallelism; delete pin.dataset.fresh; }
  const insts = Object.keys(c.instances ?? {}).sort(byInstance);
  const keys = ['emit', 'execute', 'ack', 'fail', 'execute_latency_ms', 'process_latency_ms', 'back_pressure', 'wasm_pages'];
  $('#instances').innerHTML = `<p class="muted">Rates per second over the newest metrics interval.</p>
    <table aria-label="Instances of ${esc(c.name)}"><thead><tr><th>Instance</th>${keys.map((k) => `<th class="num">${k.replace(/_ms$/, '').replaceAll('_', ' ')}</th>`).join('')}</tr></thead><tbody>
    ${insts.map((name) => `<tr data-instance="${esc(name)}" data-task="${esc(c.tasks?.[name] ?? name)}"><td title="task ${esc(c.tasks?.[name] ?? name)}">${esc(name)}</td>${keys.map((k) => {
      const v = c.instances[name][k];
      return `<td class="num">${k === 'back_pressure' ? ((v ?? 0) * 100).toFixed(1) + '%' : k.endsWith('_ms') ? fmtMs(v) : fmtNum(v)}</td>`;
    }).join('')}</tr>`).join('')}</tbody></table>`;
  $('#physical').innerHTML = physicalTable(t, c.name);
  const sel = $('#log-of');
  ui.taskNames = taskNames(t.physical);
  const names = instancesOf(t.physical, c.name).map((i) => i.name).sort(byInstance);
  const have = [...sel.options].slice(1).map((o) => o.value);
  if (names.join() !== have.join()) {
    const cur = sel.value;
    sel.innerHTML = '<option value="">all instances</option>' + names.map((n) => `<option>${esc(n)}</option>`).join('');
    sel.value = names.includes(cur) ? cur : '';
  }
  $('#exceptions').innerHTML = exceptionTable((t.instance_exceptions ?? []).filter((e) => e.component === c.name));
  if (ui.logTick++ % 3 === 0) tailLog(c.name);
}

async function tailLog(comp) {
  try {
    const inst = $('#log-of')?.value || comp;
    const res = await fetch(`${API}${topoPath(ui.route.topology)}/logs?instance=${encodeURIComponent(inst)}&lines=100`);
    const lines = await res.json();
    const pre = $('#log');
    if (!pre || ui.route.component !== comp) return;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = Array.isArray(lines) ? lines.map((l) => formatLogLine(l, ui.taskNames ?? {})).join('\n') : lines.message ?? '';
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  } catch { /* the next snapshot tries again */ }
}

// ---- start ----------------------------------------------------------------

window.addEventListener('hashchange', () => {
  const prev = ui.route.topology;
  ui.route = parseRoute(location.hash);
  build();
  if (ui.route.topology !== prev) connect();
  main.focus();
});
build();
connect();
