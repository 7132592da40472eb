// Pure helpers of the Ardea UI: formatting, routing, the plan graph's
// layout and colours, list filtering. No DOM here, so `node --test` covers
// them (lib.test.mjs).

/** Escapes text for HTML. */
export function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

/** A rate or count with a k/M suffix: 0, 12, 1.5k, 2.3M. */
export function fmtNum(v) {
  if (v == null || !isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(1) + 'G';
  if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
  if (a >= 1e4) return (v / 1e3).toFixed(1) + 'k';
  if (a >= 100 || Number.isInteger(v)) return String(Math.round(v));
  return v.toFixed(1);
}

/** Milliseconds, to three significant digits. */
export function fmtMs(ms) {
  if (ms == null || !isFinite(ms)) return '–';
  if (ms === 0) return '0 ms';
  if (ms < 1) return (ms * 1000).toPrecision(3) + ' µs';
  if (ms < 1000) return ms.toPrecision(3) + ' ms';
  return (ms / 1000).toPrecision(3) + ' s';
}

/** Seconds as 3d 4h, 2h 5m, 4m 10s, 12s. */
export function fmtDuration(s) {
  if (s == null || s < 0) return '–';
  s = Math.floor(s);
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${sec}s`;
  return `${sec}s`;
}

/** Bytes as KiB/MiB/GiB. */
export function fmtBytes(b) {
  if (b == null || !isFinite(b)) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : String(Math.round(b))) + ' ' + u[i];
}

/**
 * Parses the URL fragment: #/ (list), #/t/NAME (topology),
 * #/t/NAME/c/COMP (component). Unknown fragments go to the list.
 */
export function parseRoute(hash) {
  const parts = String(hash || '').replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'admin') {
    return { page: 'admin', section: adminSections.includes(parts[1]) ? parts[1] : 'tenants' };
  }
  if (parts[0] === 't' && parts[1]) {
    if (parts[2] === 'c' && parts[3]) return { page: 'component', topology: parts[1], component: parts[3] };
    return { page: 'topology', topology: parts[1] };
  }
  return { page: 'list' };
}

/** The fragment of a route (inverse of parseRoute). */
export function routeHash(r) {
  if (r.page === 'component') return `#/t/${encodeURIComponent(r.topology)}/c/${encodeURIComponent(r.component)}`;
  if (r.page === 'topology') return `#/t/${encodeURIComponent(r.topology)}`;
  if (r.page === 'admin') return `#/admin/${encodeURIComponent(r.section || 'tenants')}`;
  return '#/';
}

/**
 * Filters topology rows by a case-insensitive substring of name, state or
 * health, then sorts by key (name, state, uptime, throughput, health);
 * desc reverses. Does not modify rows.
 */
export function filterSort(rows, filter, key, desc) {
  const f = String(filter || '').trim().toLowerCase();
  const out = rows.filter((r) => !f || [r.name, r.state, r.health].some((v) => String(v).toLowerCase().includes(f)));
  const rank = { failing: 3, 'back-pressure': 2, exceptions: 1, ok: 0 };
  const val = (r) => (key === 'health' ? rank[r.health] ?? 0 : r[key]);
  out.sort((a, b) => {
    const x = val(a), y = val(b);
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return (desc ? -c : c) || a.name.localeCompare(b.name);
  });
  return out;
}

/**
 * Lays out the logical plan left to right: a component's column is the
 * longest path to it from a spout (cycles are refused by Ardea, but a
 * stray one cannot loop here), rows in plan order. Returns
 * {nodes: {name: {x, y, col, row}}, width, height} for boxes of w x h.
 */
export function layout(components, edges, opts = {}) {
  const w = opts.w ?? 180, h = opts.h ?? 76, gx = opts.gx ?? 90, gy = opts.gy ?? 28, pad = opts.pad ?? 16;
  const names = components.map((c) => c.name);
  const col = Object.fromEntries(names.map((n) => [n, 0]));
  for (let pass = 0; pass < names.length; pass++) {
    let changed = false;
    for (const e of edges) {
      if (e.from in col && e.to in col && e.from !== e.to && col[e.to] < col[e.from] + 1) {
        col[e.to] = col[e.from] + 1;
        changed = true;
      }
    }
    if (!changed) break;
  }
  const rows = {};
  const nodes = {};
  let maxRow = 0, maxCol = 0;
  for (const n of names) {
    const c = col[n];
    const r = (rows[c] = (rows[c] ?? -1) + 1);
    maxRow = Math.max(maxRow, r);
    maxCol = Math.max(maxCol, c);
    nodes[n] = { x: pad + c * (w + gx), y: pad + r * (h + gy), col: c, row: r };
  }
  return { nodes, w, h, width: pad * 2 + (maxCol + 1) * w + maxCol * gx, height: pad * 2 + (maxRow + 1) * h + maxRow * gy };
}

/** The SVG path of an edge between two laid-out boxes, and its label point. */
export function edgePath(a, b, w, h) {
  if (!a || !b) return null;
  const x1 = a.x + w, y1 = a.y + h / 2, x2 = b.x, y2 = b.y + h / 2;
  if (x2 <= x1) { // same column or backwards: loop around below
    const yb = Math.max(a.y, b.y) + h + 14;
    return { d: `M${x1},${y1} C${x1 + 40},${yb} ${x2 - 40},${yb} ${x2},${y2}`, lx: (x1 + x2) / 2, ly: yb };
  }
  const mx = (x1 + x2) / 2;
  return { d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, lx: mx, ly: (y1 + y2) / 2 - 6 };
}

/**
 * The overlay value of a component (0 good .. 1 bad): back pressure is
 * the fraction of time waited; failures the share of failed (and timed
 * out) tuples, or 1 with exceptions in the last interval; capacity is
 * Storm's, 1 = saturated.
 */
export function overlayValue(c, overlay) {
  if (overlay === 'backpressure') return clamp(c.back_pressure ?? 0);
  if (overlay === 'capacity') return clamp(c.capacity ?? 0);
  const r = c.rates || {};
  const bad = (r.fail ?? 0) + (r.timeout ?? 0);
  const done = bad + (r.ack ?? 0);
  if (done > 0) return clamp(bad / done);
  return (c.exceptions ?? 0) > 0 ? 0.5 : 0;
}

function clamp(v) { return Math.max(0, Math.min(1, v)); }

/** Green (0) through amber to red (1), as an HSL colour. */
export function heat(v) {
  const hue = Math.round(130 * (1 - clamp(v)));
  return `hsl(${hue} 60% 88%)`;
}

/** Sums the instances of a physical plan: [{container, instance...}]. */
export function instancesOf(physical, component) {
  const out = [];
  for (const c of physical?.containers ?? []) {
    for (const i of c.instances ?? []) {
      if (!component || i.name.split('/')[0] === component) out.push({ container: c.id, ...i });
    }
  }
  return out;
}

/** Polyline points of values scaled into w x h (max at the top). */
export function sparkPoints(values, w, h) {
  if (!values?.length) return '';
  const max = Math.max(...values, 1e-9);
  const dx = values.length > 1 ? w / (values.length - 1) : 0;
  return values.map((v, i) => `${(i * dx).toFixed(1)},${(h - (v / max) * h).toFixed(1)}`).join(' ');
}

/** Base64 of an ArrayBuffer (for a module upload in JSON). */
export function toBase64(buf) {
  const bytes = new Uint8Array(buf);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/**
 * A container log line (JSON, as the host writes it) as
 * "15:04:05.000 INFO msg key=value ..."; the routing keys every line
 * carries (time, level, msg, topology, container) are not repeated, and
 * an instance's component and task are shown as instance=component/index
 * when names (task id -> component/index) knows the task.
 * Lines that are not JSON objects are returned as they are.
 */
export function formatLogLine(line, names = {}) {
  let o;
  try { o = JSON.parse(line); } catch { return line; }
  if (!o || typeof o !== 'object' || Array.isArray(o)) return line;
  const t = typeof o.time === 'string' ? o.time.replace(/^.*T(\d\d:\d\d:\d\d(\.\d{1,3})?).*$/, '$1') : '';
  const skip = new Set(['time', 'level', 'msg', 'topology', 'container']);
  const inst = o.task != null ? names[String(o.task)] : undefined;
  const named = typeof o.component === 'string' && typeof inst === 'string' && inst.startsWith(o.component + '/');
  if (named) { skip.add('component'); skip.add('task'); }
  const kv = Object.entries(o).filter(([k]) => !skip.has(k)).map(([k, v]) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    return `${k}=${/[\s"=]/.test(s) ? JSON.stringify(s) : s}`;
  });
  if (named) kv.unshift(`instance=${inst}`);
  return [t, String(o.level ?? '').padEnd(5), o.msg ?? '', ...kv].filter((x) => x !== '').join(' ');
}

/** Task id -> component/index, from a physical plan's instances. */
export function taskNames(physical) {
  const out = {};
  for (const i of instancesOf(physical)) if (i.task != null) out[String(i.task)] = i.name;
  return out;
}

/** Orders instance names by component, then numeric index (count/2 before count/10). */
export function byInstance(a, b) {
  const [ca, ia] = String(a).split('/');
  const [cb, ib] = String(b).split('/');
  if (ca !== cb) return ca < cb ? -1 : 1;
  const na = Number(ia), nb = Number(ib);
  if (Number.isFinite(na) && Number.isFinite(nb)) return na - nb;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

// ---- login and scopes -------------------------------------------------------

/**
 * Reads a login link's token from the URL fragment ("#token=T", as
 * `ardea demo` prints it, possibly followed by "&..."); null without one.
 */
export function tokenFromHash(hash) {
  const m = /^#token=([^&]+)/.exec(String(hash || ''));
  if (!m) return null;
  try {
    const t = decodeURIComponent(m[1]).trim();
    return t || null;
  } catch {
    return null;
  }
}

const scopeRank = { read: 1, operate: 2, deploy: 3, admin: 4 };

/**
 * Whether a token of scope has reaches what need requires (read < operate
 * < deploy < admin, each including the ones before; metrics is apart and
 * reaches none of them), as internal/auth's Scope.Allows.
 */
export function scopeAllows(has, need) {
  const h = scopeRank[has] ?? 0;
  return h > 0 && h >= (scopeRank[need] ?? Infinity);
}

/** The scope each of the UI's actions takes (httpsec.DefaultRoutes). */
export const actionScopes = {
  activate: 'operate', deactivate: 'operate', update: 'operate', restart: 'operate', rollback: 'operate',
  swap: 'deploy', kill: 'deploy', 'dlq-replay': 'deploy',
  admin: 'admin',
};

/** The admin pages, in the order the navigation shows them. */
export const adminSections = ['tenants', 'tokens', 'quotas', 'audit'];
