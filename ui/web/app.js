// The Ardea UI: one page, routed by the URL fragment, drawn from the
// daemon's event stream (GET /api/v1/events, one snapshot a second) and
// acting through its API. Each page builds its static parts (forms,
// buttons) once and refreshes only its live regions on each snapshot, so
// typing in a field is never interrupted.
//
// Every call carries the token (Authorization: Bearer), kept in
// sessionStorage (gone with the tab; never a cookie, never localStorage);
// state-changing calls are JSON. The event stream, which EventSource
// cannot send headers to, opens with a single-use ticket asked for by an
// authenticated POST /api/v1/tickets, a new one on every reconnect. Actions
// are offered only as far as the token's scope reaches (the server refuses
// the rest anyway); a 401 anywhere returns to the login form.
import {
  esc, fmtNum, fmtMs, fmtDuration, fmtBytes, parseRoute, routeHash, filterSort,
  layout, edgePath, overlayValue, heat, instancesOf, sparkPoints, toBase64, formatLogLine, taskNames, byInstance,
  tokenFromHash, scopeAllows, actionScopes, adminSections,
} from './lib.js';

const API = '/api/v1';
const TOKEN_KEY = 'ardea.token';
const $ = (sel, root = document) => root.querySelector(sel);
const main = $('#main');

const ui = {
  route: parseRoute(location.hash),
  token: null,
  me: null, // GET /api/v1/whoami: tenant, scope, token_id, name, expires
  snap: null,
  es: null,
  esGen: 0,
  retry: null,
  sort: { key: 'name', desc: false },
  filter: '',
  overlay: 'backpressure',
  window: '10m',
  logTick: 0,
  quotaTenant: '',
};

// can reports whether the token's scope reaches what action takes
// (actionScopes) or a scope by name.
const can = (what) => !!ui.me && scopeAllows(ui.me.scope, actionScopes[what] ?? what);

// ---- the API ------------------------------------------------------------

class Unauthorized extends Error {}

// api calls the API with the token; state-changing methods send JSON (a
// body of {} when there is none). It returns the decoded answer, or
// throws with the API's message. A 401 after login ends the session.
async function api(path, { method = 'GET', body } = {}) {
  const headers = { Authorization: `Bearer ${ui.token}` };
  const init = { method, headers, cache: 'no-store', credentials: 'omit' };
  if (method !== 'GET' && method !== 'HEAD') {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body ?? {});
  }
  const res = await fetch(API + path, init);
  const data = await res.json().catch(() => null);
  const msg = data?.message || data?.error || `${res.status} ${res.statusText}`;
  if (res.status === 401) {
    if (ui.me) logout(`Signed out: the server refused the token (${msg}).`);
    throw new Unauthorized(msg);
  }
  if (!res.ok) throw new Error(msg);
  return data;
}

// ---- login ----------------------------------------------------------------

function showLogin(message) {
  ui.me = null;
  header();
  $('#crumbs').innerHTML = '';
  document.title = 'Log in · Ardea';
  main.innerHTML = `
  <section class="login" aria-labelledby="login-h">
    <h1 id="login-h">Log in</h1>
    <p>Paste an API token (<code>ardea token create</code>; <code>ardea local</code> writes its admin token to
      <code>&lt;data-dir&gt;/admin.token</code>). It is kept in this tab only.</p>
    <form id="login" class="bar">
      <label>Token <input id="login-token" type="password" autocomplete="off" spellcheck="false" required size="48"></label>
      <button class="primary">Log in</button>
    </form>
    <p id="login-error" class="err" role="alert"></p>
  </section>`;
  $('#login-error').textContent = message || '';
  $('#login').addEventListener('submit', (e) => {
    e.preventDefault();
    login($('#login-token').value.trim());
  });
  $('#login-token').focus();
}

// login checks token with GET /api/v1/whoami and, if it is good, keeps it
// and opens the page.
async function login(token) {
  if (!token) return showLogin();
  ui.token = token;
  try {
    ui.me = await api('/whoami');
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    ui.token = null;
    showLogin(e instanceof Unauthorized ? `The server refused this token: ${e.message}` : `Could not check the token: ${e.message}`);
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  header();
  build();
  connect();
}

function logout(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  ui.token = null;
  ui.me = null;
  ui.snap = null;
  disconnect();
  showLogin(message);
}

// header shows who is logged in and what they may open.
function header() {
  const me = ui.me;
  const who = $('#who');
  who.hidden = !me;
  who.textContent = me ? `${me.tenant} · ${me.scope}` : '';
  who.dataset.tenant = me?.tenant ?? '';
  who.dataset.scope = me?.scope ?? '';
  who.title = me ? `token ${me.token_id}${me.name ? ` (${me.name})` : ''}${me.expires ? `, expires ${new Date(me.expires).toLocaleString()}` : ''}` : '';
  $('#admin-link').hidden = !can('admin');
  $('#logout').hidden = !me;
  $('#conn').hidden = !me;
}

// ---- event stream -------------------------------------------------------

function disconnect() {
  ui.esGen++;
  clearTimeout(ui.retry);
  if (ui.es) ui.es.close();
  ui.es = null;
}

// connect opens the event stream with a fresh ticket; on an error it
// closes it and connects again with a new ticket (a ticket is good once).
async function connect(delay = 1000) {
  disconnect();
  const gen = ui.esGen;
  if (!ui.me) return;
  let ticket;
  try {
    ({ ticket } = await api('/tickets', { method: 'POST' }));
  } catch (e) {
    if (e instanceof Unauthorized || gen !== ui.esGen) return;
    $('#conn').textContent = `reconnecting… (${e.message})`;
    ui.retry = setTimeout(() => connect(Math.min(delay * 2, 15000)), delay);
    return;
  }
  if (gen !== ui.esGen) return;
  const q = new URLSearchParams({ ticket });
  if (ui.route.topology) q.set('topology', ui.route.topology);
  const es = new EventSource(`${API}/events?${q}`);
  ui.es = es;
  es.addEventListener('snapshot', (ev) => {
    delay = 1000;
    ui.snap = JSON.parse(ev.data);
    $('#conn').textContent = `live · ${new Date(ui.snap.time * 1000).toLocaleTimeString()}`;
    refresh();
  });
  es.onerror = () => {
    es.close();
    if (gen !== ui.esGen) return;
    $('#conn').textContent = 'reconnecting…';
    ui.retry = setTimeout(() => connect(Math.min(delay * 2, 15000)), delay);
  };
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

// call POSTs (or method) to the API and toasts the outcome; null on an
// error.
async function call(path, body, what, method = 'POST') {
  try {
    const data = await api(path, { method, body });
    toast(`${what}: done`);
    return data ?? {};
  } catch (e) {
    if (!(e instanceof Unauthorized)) toast(`${what}: ${e.message}`, true);
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
  if (r.page === 'admin') h += ` › <a href="#/admin/tenants">Admin</a> › <span>${esc(r.section)}</span>`;
  if (r.topology) h += ` › <a href="${routeHash({ page: 'topology', topology: r.topology })}">${esc(r.topology)}</a>`;
  if (r.component) h += ` › <span>${esc(r.component)}</span>`;
  $('#crumbs').innerHTML = h;
}

function build() {
  crumbs();
  const r = ui.route;
  if (r.page === 'list') buildList();
  else if (r.page === 'topology') buildTopology();
  else if (r.page === 'admin') buildAdmin(r.section);
  else buildComponent();
  refresh();
}

function refresh() {
  if (!ui.snap || !ui.me) return;
  const r = ui.route;
  if (r.page === 'admin') return;
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
  ${can('operate') ? `<div class="bar" role="group" aria-label="Topology actions">
    <button id="activate" class="primary">Activate</button>
    <button id="deactivate">Deactivate</button>
    ${can('kill') ? '<button id="kill" class="danger">Kill</button>' : ''}
    ${can('dlq-replay') ? '<button id="dlq-replay" title="Replay the dead letters of its built-in spouts into their sources">Replay dead letters</button>' : ''}
  </div>` : ''}
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
  $('#activate')?.addEventListener('click', () => act('activate'));
  $('#deactivate')?.addEventListener('click', () => act('deactivate'));
  $('#kill')?.addEventListener('click', () => act('kill'));
  $('#dlq-replay')?.addEventListener('click', async () => {
    if (!(await confirmAction(`Replay the dead letters of ${name}'s built-in spouts into their sources?`))) return;
    const r = await call(`${topoPath(name)}/dlq/replay`, null, `replay dead letters of ${name}`);
    if (r) toast(`${r.dead_letters?.length ?? 0} dead letters replayed`);
  });
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
  if ($('#activate')) {
    $('#activate').disabled = state === 'running';
    $('#deactivate').disabled = state !== 'running';
  }
  replaceKeepingFocus($('#graph'), graphSVG(t), 'a.node');
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

// replaceKeepingFocus replaces el's content with html; the element of
// selector that had the keyboard focus (by its data-component) has it
// again afterwards, so the page's refresh never takes a keyboard user's
// place away.
function replaceKeepingFocus(el, html, selector) {
  const focused = document.activeElement?.closest?.(selector);
  const name = focused && el.contains(focused) ? focused.dataset.component : undefined;
  el.innerHTML = html;
  if (name === undefined) return;
  for (const n of el.querySelectorAll(selector)) {
    if (n.dataset.component === name) {
      n.focus();
      return;
    }
  }
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
        ${k === 0 ? `<td rowspan="${rows.length}">${c.id}${c.node ? `<br><span class="muted" data-node>on ${esc(c.node)}</span>` : ''}</td><td class="num" rowspan="${rows.length}">${c.pid || '–'}</td>
          <td rowspan="${rows.length}">${esc(c.process)} / ${esc(c.host)}${c.last_error ? `<br><span class="err" title="${esc(c.last_error)}">${esc(firstLine(c.last_error, 80))}</span>` : ''}</td>
          <td class="num" rowspan="${rows.length}">${host.cpu != null ? (host.cpu * 100).toFixed(0) + '%' : '–'}</td>
          <td class="num" rowspan="${rows.length}">${fmtBytes(host.rss)}</td>
          <td class="num" rowspan="${rows.length}">${c.restarts}</td>` : ''}
        <td${i.task != null ? ` title="task ${i.task}"` : ''}>${esc(i.name)}</td><td>${esc(i.state)}</td>
        <td class="num">${fmtNum(insts[i.name]?.wasm_pages)}</td><td class="num">${fmtNum(insts[i.name]?.execute)}</td>
        ${k === 0 ? `<td rowspan="${rows.length}">${can('restart') ? `<button data-restart="${c.id}" aria-label="Restart container ${c.id}">Restart</button>` : ''}</td>` : ''}
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
  ${can('operate') ? `<section aria-labelledby="ops-h"><h2 id="ops-h">Operate</h2>
    <form id="scale" class="bar"><label>Parallelism <input id="parallelism" type="number" min="1" max="1024" required></label>
      <button class="primary">Change parallelism</button></form>
    <form id="swap" class="bar">${can('swap') ? `<label>New module (.wasm) <input id="module" type="file" accept=".wasm,application/wasm" required></label>
      <button class="primary">Swap module</button>` : ''}<button type="button" id="rollback">Roll back</button></form>
  </section>` : ''}
  <section aria-labelledby="inst-h"><h2 id="inst-h">Instances</h2><div id="instances"></div></section>
  <section aria-labelledby="cphys-h"><h2 id="cphys-h">Where it runs</h2><div id="physical"></div></section>
  <section aria-labelledby="cexc-h"><h2 id="cexc-h">Exceptions</h2><div id="exceptions"></div></section>
  <section aria-labelledby="log-h"><h2 id="log-h">Log tail</h2>
    <div class="bar"><label>Instance <select id="log-of"><option value="">all instances</option></select></label></div>
    <pre class="log" id="log" tabindex="0" aria-live="off"></pre></section>`;
  $('#log-of').onchange = () => { ui.logTick = 0; tailLog(comp); };
  ui.logTick = 0;
  const pin = $('#parallelism');
  if (!pin) return; // a read token: nothing to operate
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
    const f = $('#module')?.files[0];
    if (!f) return;
    if (!(await confirmAction(`Swap ${comp} to ${f.name} (${fmtBytes(f.size)})? Its tasks switch without a restart and roll back if they fail.`))) return;
    const module = toBase64(await f.arrayBuffer());
    await call(`${topoPath(name)}/swap`, { component: comp, module, source: f.name, by: 'ui' }, `swap ${comp}`);
  };
  $('#rollback').onclick = async () => {
    if (!(await confirmAction(`Roll ${comp} back to its previous module version?`))) return;
    await call(`${topoPath(name)}/rollback?component=${encodeURIComponent(comp)}&by=ui`, null, `roll back ${comp}`);
  };
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
  // Built-in components have no module to swap (nor to roll back to).
  if ($('#swap')) $('#swap').hidden = c.language === 'builtin';
  const pin = $('#parallelism');
  if (pin?.dataset.fresh && document.activeElement !== pin) { pin.value = c.parallelism; delete pin.dataset.fresh; }
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
    const lines = await api(`${topoPath(ui.route.topology)}/logs?instance=${encodeURIComponent(inst)}&lines=100`).catch((e) => ({ message: e.message }));
    const pre = $('#log');
    if (!pre || ui.route.component !== comp) return;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = Array.isArray(lines) ? lines.map((l) => formatLogLine(l, ui.taskNames ?? {})).join('\n') : lines.message ?? '';
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  } catch { /* the next snapshot tries again */ }
}

// ---- admin pages ------------------------------------------------------------

// The quotas the admin API takes (internal/quota; values as in the
// deployment file: numbers, sizes such as 16MiB, cores, "unlimited") and
// which of them have a usage.
const quotaFields = [
  ['topologies', 'Topologies', true], ['instances', 'Instances', true], ['containers', 'Containers', true],
  ['wasm_memory_pages', 'Wasm memory pages', true], ['tuples_per_second', 'Tuples/s into the bus', false],
  ['bytes_per_second', 'Bytes/s into the bus', false], ['cpu', 'CPU (cores)', false],
  ['jetstream_memory', 'JetStream memory', true], ['jetstream_disk', 'JetStream disk', true],
];
const bytesQuota = (k) => k === 'bytes_per_second' || k.startsWith('jetstream_');
const fmtQuota = (k, v) => (v == null ? '–' : v === 0 ? 'unlimited' : bytesQuota(k) ? fmtBytes(v) : k === 'cpu' ? String(v) : fmtNum(v));
const fmtTime = (t) => (t ? new Date(t).toLocaleString() : '–');

function buildAdmin(section) {
  document.title = `Admin: ${section} · Ardea`;
  const nav = `<nav class="bar tabs" id="admin-nav" aria-label="Admin pages">${adminSections.map((s) =>
    `<a href="${routeHash({ page: 'admin', section: s })}"${s === section ? ' aria-current="page"' : ''}>${s[0].toUpperCase() + s.slice(1)}</a>`).join('')}</nav>`;
  if (!can('admin')) {
    main.innerHTML = `<h1>Admin</h1><p class="err" role="alert" id="admin-refused">These pages need a token with scope admin; this one has ${esc(ui.me?.scope)}.</p>`;
    return;
  }
  main.innerHTML = `<h1>Admin</h1>${nav}<p id="admin-error" class="err" role="alert"></p><div id="admin"></div>`;
  ({ tenants: adminTenants, tokens: adminTokens, quotas: adminQuotas, audit: adminAudit })[section]();
}

// adminLoad runs f, showing its error on the page.
async function adminLoad(f) {
  try {
    $('#admin-error').textContent = '';
    await f();
  } catch (e) {
    if (!(e instanceof Unauthorized) && $('#admin-error')) $('#admin-error').textContent = e.message;
  }
}

// Tenants: list, create, delete.
function adminTenants() {
  $('#admin').innerHTML = `<section aria-labelledby="tenants-h"><h2 id="tenants-h">Tenants</h2>
    <form id="tenant-create" class="bar"><label>New tenant <input id="tenant-name" required maxlength="64" autocomplete="off"></label>
      <button class="primary">Create tenant</button></form>
    <table aria-label="Tenants"><thead><tr><th>Name</th><th>Created</th><th>By</th><th class="num">Active tokens</th><th class="num">Topologies</th><th class="num">Instances</th><th></th></tr></thead>
    <tbody id="tenants"></tbody></table></section>`;
  const load = () => adminLoad(async () => {
    const ts = await api('/tenants');
    $('#tenants').innerHTML = ts.map((t) => `<tr data-tenant="${esc(t.name)}"><td>${esc(t.name)}</td><td>${fmtTime(t.created)}</td>
      <td>${esc(t.created_by)}</td><td class="num">${t.tokens}</td><td class="num" data-field="topologies">–</td><td class="num" data-field="instances">–</td>
      <td><button data-quotas="${esc(t.name)}">Quotas &amp; usage</button> <button class="danger" data-delete-tenant="${esc(t.name)}">Delete</button></td></tr>`).join('')
      || '<tr><td colspan="7" class="muted">No tenants.</td></tr>';
    // Usage, from each tenant's quotas (where the daemon reports it).
    await Promise.all(ts.map(async (t) => {
      const q = await api(`/tenants/${encodeURIComponent(t.name)}/quotas`).catch(() => null);
      const row = $(`#tenants tr[data-tenant="${CSS.escape(t.name)}"]`);
      if (!q?.usage || !row) return;
      for (const k of ['topologies', 'instances']) {
        row.querySelector(`[data-field="${k}"]`).textContent = `${fmtNum(q.usage[k])} / ${fmtQuota(k, q.quotas?.[k])}`;
      }
    }));
  });
  $('#tenant-create').addEventListener('submit', async (e) => {
    e.preventDefault();
    const name = $('#tenant-name').value.trim();
    if (await call('/tenants', { name }, `create tenant ${name}`)) {
      $('#tenant-name').value = '';
      load();
    }
  });
  $('#tenants').addEventListener('click', async (e) => {
    const q = e.target.closest('button[data-quotas]');
    if (q) {
      ui.quotaTenant = q.dataset.quotas;
      location.hash = routeHash({ page: 'admin', section: 'quotas' });
      return;
    }
    const b = e.target.closest('button[data-delete-tenant]');
    if (!b) return;
    const name = b.dataset.deleteTenant;
    if (!(await confirmAction(`Delete tenant ${name}? Its tokens are revoked. A tenant that still has topologies is refused.`))) return;
    if (await call(`/tenants/${encodeURIComponent(name)}`, null, `delete tenant ${name}`, 'DELETE')) load();
  });
  load();
}

// tenantOptions fills a select with the tenants' names.
async function tenantOptions(sel, { any = false, selected = '' } = {}) {
  const ts = await api('/tenants');
  sel.innerHTML = (any ? '<option value="">all tenants</option>' : '') +
    ts.map((t) => `<option${t.name === selected ? ' selected' : ''}>${esc(t.name)}</option>`).join('');
  return ts;
}

// Tokens: list, create (the secret shown once), revoke.
function adminTokens() {
  $('#admin').innerHTML = `<section aria-labelledby="tokens-h"><h2 id="tokens-h">Tokens</h2>
    <form id="token-create" class="bar">
      <label>Tenant <select id="token-tenant" required></select></label>
      <label>Scope <select id="token-scope">${['read', 'operate', 'deploy', 'admin', 'metrics'].map((s) => `<option>${s}</option>`).join('')}</select></label>
      <label>Name <input id="token-name" maxlength="64" placeholder="e.g. ci, alice"></label>
      <label>Expires in <input id="token-expires" placeholder="e.g. 30d, 12h; empty: never" size="14"></label>
      <button class="primary">Create token</button></form>
    <div id="token-new" class="secret" hidden><p><b>The new token's secret, shown this once:</b> copy it now.</p>
      <p><code id="token-secret"></code></p><p class="muted">Log in with it here, or: <code>ardea login SERVER --token -</code></p></div>
    <div class="bar"><label>Show <select id="token-filter"></select></label></div>
    <table aria-label="Tokens"><thead><tr><th>ID</th><th>Tenant</th><th>Name</th><th>Scope</th><th>State</th><th>Created</th><th>Expires</th><th></th></tr></thead>
    <tbody id="tokens"></tbody></table></section>`;
  const load = () => adminLoad(async () => {
    const t = $('#token-filter').value;
    const ts = await api(`/tokens${t ? `?tenant=${encodeURIComponent(t)}` : ''}`);
    $('#tokens').innerHTML = ts.map((k) => `<tr data-token="${esc(k.id)}" data-state="${esc(k.state)}"><td><code>${esc(k.id)}</code>${k.id === ui.me.token_id ? ' <span class="badge">this session</span>' : ''}</td>
      <td>${esc(k.tenant)}</td><td>${esc(k.name)}</td><td>${esc(k.scope)}</td><td><span class="badge ${k.state === 'active' ? 'ok' : 'killed'}">${esc(k.state)}</span></td>
      <td>${fmtTime(k.created)}</td><td>${k.expires ? fmtTime(k.expires) : 'never'}</td>
      <td>${k.state === 'active' ? `<button class="danger" data-revoke="${esc(k.id)}">Revoke</button>` : ''}</td></tr>`).join('')
      || '<tr><td colspan="8" class="muted">No tokens.</td></tr>';
  });
  adminLoad(async () => {
    await tenantOptions($('#token-tenant'), { selected: ui.me.tenant });
    await tenantOptions($('#token-filter'), { any: true });
    $('#token-filter').addEventListener('change', load);
    await load();
  });
  $('#token-create').addEventListener('submit', async (e) => {
    e.preventDefault();
    const req = { tenant: $('#token-tenant').value, scope: $('#token-scope').value };
    const name = $('#token-name').value.trim();
    const exp = $('#token-expires').value.trim();
    if (name) req.name = name;
    if (exp) req.expires_in = exp;
    const r = await call('/tokens', req, `create a ${req.scope} token for ${req.tenant}`);
    if (!r) return;
    $('#token-secret').textContent = r.secret;
    $('#token-new').hidden = false;
    $('#token-name').value = '';
    load();
  });
  $('#tokens').addEventListener('click', async (e) => {
    const b = e.target.closest('button[data-revoke]');
    if (!b) return;
    const id = b.dataset.revoke;
    const self = id === ui.me.token_id ? ' This is the token of this session: you will be logged out.' : '';
    if (!(await confirmAction(`Revoke token ${id}? Calls with it are refused from now on.${self}`))) return;
    if (await call(`/tokens/${encodeURIComponent(id)}`, null, `revoke token ${id}`, 'DELETE')) load();
  });
}

// Quotas and usage of one tenant; the form replaces its override.
function adminQuotas() {
  $('#admin').innerHTML = `<section aria-labelledby="quotas-h"><h2 id="quotas-h">Quotas and usage</h2>
    <div class="bar"><label>Tenant <select id="quota-tenant"></select></label></div>
    <form id="quota-form">
    <table aria-label="Quotas"><thead><tr><th>Quota</th><th class="num">Usage</th><th class="num">Effective</th><th class="num">Deployment file</th><th>Override (admin API)</th></tr></thead>
    <tbody id="quotas"></tbody></table>
    <p class="muted">Values as in the deployment file: numbers, sizes (16MiB), cores (0.5), <code>unlimited</code>. An empty override falls back to the deployment file.</p>
    <div class="bar"><button class="primary">Save overrides</button></div></form></section>`;
  const show = (q) => {
    $('#quotas').innerHTML = quotaFields.map(([k, label, hasUsage]) => `<tr data-quota="${k}"><td>${esc(label)}</td>
      <td class="num" data-field="usage">${hasUsage && q.usage ? (bytesQuota(k) ? fmtBytes(q.usage[k]) : fmtNum(q.usage[k])) : '–'}</td>
      <td class="num" data-field="effective">${fmtQuota(k, q.quotas?.[k])}</td>
      <td class="num" data-field="file">${k in (q.file ?? {}) ? fmtQuota(k, q.file[k]) : '–'}</td>
      <td><input data-quota-field="${k}" aria-label="Override of ${esc(label)}" size="12" value="${k in (q.override ?? {}) ? esc(String(q.override[k])) : ''}"></td></tr>`).join('');
  };
  const load = () => adminLoad(async () => {
    const t = $('#quota-tenant').value;
    if (!t) return;
    ui.quotaTenant = t;
    show(await api(`/tenants/${encodeURIComponent(t)}/quotas`));
  });
  adminLoad(async () => {
    await tenantOptions($('#quota-tenant'), { selected: ui.quotaTenant || ui.me.tenant });
    $('#quota-tenant').addEventListener('change', load);
    await load();
  });
  $('#quota-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const t = $('#quota-tenant').value;
    const body = {};
    for (const inp of document.querySelectorAll('input[data-quota-field]')) {
      const v = inp.value.trim();
      if (v === '') continue;
      body[inp.dataset.quotaField] = /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
    }
    const r = await call(`/tenants/${encodeURIComponent(t)}/quotas`, body, `quotas of ${t}`, 'PUT');
    if (r) show(r);
  });
}

// The audit log, newest first, filtered by tenant and time.
function adminAudit() {
  $('#admin').innerHTML = `<section aria-labelledby="audit-h"><h2 id="audit-h">Audit log</h2>
    <form id="audit-filter" class="bar">
      <label>Tenant <select id="audit-tenant"></select></label>
      <label>Since <input id="audit-since" placeholder="1h, 2026-12-01T00:00:00Z" size="22"></label>
      <label>At most <input id="audit-limit" type="number" min="1" max="10000" value="100"></label>
      <button class="primary">Show</button></form>
    <table aria-label="Audit log"><thead><tr><th>Time</th><th>Principal</th><th>Tenant</th><th>Action</th><th>Target</th><th>Request</th><th>Result</th><th>Source</th></tr></thead>
    <tbody id="audit"></tbody></table></section>`;
  const load = () => adminLoad(async () => {
    const q = new URLSearchParams();
    for (const [k, id] of [['tenant', '#audit-tenant'], ['since', '#audit-since'], ['limit', '#audit-limit']]) {
      const v = $(id).value.trim();
      if (v) q.set(k, v);
    }
    const recs = await api(`/audit?${q}`);
    recs.reverse(); // the API answers oldest first
    $('#audit').innerHTML = recs.map((r) => `<tr data-action="${esc(r.action)}" data-code="${r.result?.code}">
      <td>${fmtTime(r.time)}</td><td>${esc(r.principal || '–')}</td><td>${esc(r.tenant || '–')}</td><td>${esc(r.action)}</td>
      <td>${esc(r.target || '')}</td><td><code>${esc(r.method)} ${esc(r.path)}</code>${r.params ? `<br><span class="muted">${esc(firstLine(JSON.stringify(r.params), 120))}</span>` : ''}</td>
      <td><span class="badge ${r.result?.ok ? 'ok' : 'failed'}">${r.result?.ok ? 'ok' : r.result?.code}</span>${r.result?.error ? ` <span class="err">${esc(firstLine(r.result.error, 120))}</span>` : ''}</td>
      <td>${esc(r.source || '')}</td></tr>`).join('') || '<tr><td colspan="8" class="muted">No records.</td></tr>';
  });
  $('#audit-filter').addEventListener('submit', (e) => { e.preventDefault(); load(); });
  adminLoad(async () => {
    await tenantOptions($('#audit-tenant'), { any: true });
    await load();
  });
}

// ---- start ----------------------------------------------------------------

// takeLinkToken moves a login link's token (#token=..., as `ardea demo`
// prints it) into sessionStorage and removes it from the address bar and
// the history; it returns the token or null.
function takeLinkToken() {
  const t = tokenFromHash(location.hash);
  if (!t) return null;
  history.replaceState(null, '', `${location.pathname}${location.search}#/`);
  sessionStorage.setItem(TOKEN_KEY, t);
  return t;
}

window.addEventListener('hashchange', () => {
  const linked = takeLinkToken();
  const prev = ui.route.topology;
  ui.route = parseRoute(location.hash);
  if (linked) { disconnect(); login(linked); return; }
  if (!ui.me) return;
  build();
  if (ui.route.topology !== prev) connect();
  main.focus();
});
$('#logout').addEventListener('click', () => logout('Logged out.'));
takeLinkToken();
ui.route = parseRoute(location.hash);
const stored = sessionStorage.getItem(TOKEN_KEY);
if (stored) login(stored);
else showLogin();
