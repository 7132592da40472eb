// Unit tests of the UI's client-side logic: node --test ui/web/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  esc, fmtNum, fmtMs, fmtDuration, fmtBytes, parseRoute, routeHash, filterSort,
  layout, edgePath, overlayValue, heat, instancesOf, sparkPoints, toBase64, formatLogLine, taskNames, byInstance,
  tokenFromHash, scopeAllows, actionScopes, adminSections,
} from './lib.js';

test('esc escapes markup', () => {
  assert.equal(esc(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  assert.equal(esc(null), '');
});

test('number, duration and byte formats', () => {
  for (const [v, want] of [[0, '0'], [12, '12'], [12.34, '12.3'], [999.6, '1000'], [12345, '12.3k'], [2.5e6, '2.5M'], [3e9, '3.0G'], [NaN, '–'], [undefined, '–']]) {
    assert.equal(fmtNum(v), want, `fmtNum(${v})`);
  }
  assert.equal(fmtMs(0), '0 ms');
  assert.equal(fmtMs(0.0481), '48.1 µs');
  assert.equal(fmtMs(12.345), '12.3 ms');
  assert.equal(fmtMs(2500), '2.50 s');
  assert.equal(fmtDuration(12), '12s');
  assert.equal(fmtDuration(250), '4m 10s');
  assert.equal(fmtDuration(7500), '2h 5m');
  assert.equal(fmtDuration(3 * 86400 + 4 * 3600), '3d 4h');
  assert.equal(fmtDuration(-1), '–');
  assert.equal(fmtBytes(512), '512 B');
  assert.equal(fmtBytes(3 * 1024 * 1024), '3.0 MiB');
});

test('routes round-trip and unknown fragments go to the list', () => {
  for (const r of [{ page: 'list' }, { page: 'topology', topology: 'word count' }, { page: 'component', topology: 'wc', component: 'a/b' }]) {
    assert.deepEqual(parseRoute(routeHash(r)), r);
  }
  assert.deepEqual(parseRoute('#/nonsense'), { page: 'list' });
  assert.deepEqual(parseRoute(''), { page: 'list' });
  assert.deepEqual(parseRoute('#/t/wc/c'), { page: 'topology', topology: 'wc' });
});

test('filterSort filters by name, state or health and sorts stably', () => {
  const rows = [
    { name: 'b', state: 'RUNNING', uptime: 5, throughput: 10, health: 'ok' },
    { name: 'a', state: 'PAUSED', uptime: 50, throughput: 0, health: 'failing' },
    { name: 'c', state: 'RUNNING', uptime: 1, throughput: 99, health: 'back-pressure' },
  ];
  assert.deepEqual(filterSort(rows, '', 'name', false).map((r) => r.name), ['a', 'b', 'c']);
  assert.deepEqual(filterSort(rows, 'running', 'throughput', true).map((r) => r.name), ['c', 'b']);
  assert.deepEqual(filterSort(rows, 'FAIL', 'name', false).map((r) => r.name), ['a']);
  assert.deepEqual(filterSort(rows, '', 'health', true).map((r) => r.name), ['a', 'c', 'b']);
  assert.deepEqual(filterSort(rows, '', 'uptime', false).map((r) => r.name), ['c', 'b', 'a']);
  assert.equal(rows[0].name, 'b', 'the input is not reordered');
});

test('layout puts each component one column after its furthest upstream', () => {
  const comps = ['lines', 'split', 'count', 'out', 'audit'].map((name) => ({ name }));
  const edges = [
    { from: 'lines', to: 'split' }, { from: 'split', to: 'count' }, { from: 'count', to: 'out' },
    { from: 'lines', to: 'audit' }, { from: 'count', to: 'audit' },
  ];
  const L = layout(comps, edges, { w: 100, h: 50, gx: 20, gy: 10, pad: 0 });
  assert.deepEqual(Object.fromEntries(Object.entries(L.nodes).map(([n, p]) => [n, p.col])),
    { lines: 0, split: 1, count: 2, out: 3, audit: 3 });
  assert.equal(L.nodes.audit.row, 1);
  assert.equal(L.nodes.out.x, 360);
  assert.equal(L.width, 4 * 100 + 3 * 20);
  assert.equal(L.height, 2 * 50 + 10);
  // A stray cycle terminates.
  const C = layout([{ name: 'x' }, { name: 'y' }], [{ from: 'x', to: 'y' }, { from: 'y', to: 'x' }]);
  assert.ok(C.nodes.x && C.nodes.y);
});

test('edgePath joins box sides and loops back for same-column edges', () => {
  const p = edgePath({ x: 0, y: 0 }, { x: 200, y: 100 }, 100, 50);
  assert.match(p.d, /^M100,25 C150,25 150,125 200,125$/);
  assert.equal(p.lx, 150);
  const back = edgePath({ x: 200, y: 0 }, { x: 0, y: 0 }, 100, 50);
  assert.ok(back.ly > 50);
  assert.equal(edgePath(undefined, { x: 0, y: 0 }, 1, 1), null);
});

test('overlays rank components from 0 (fine) to 1 (bad)', () => {
  assert.equal(overlayValue({ back_pressure: 0.25 }, 'backpressure'), 0.25);
  assert.equal(overlayValue({ capacity: 3 }, 'capacity'), 1);
  assert.equal(overlayValue({ rates: { ack: 90, fail: 5, timeout: 5 } }, 'failures'), 0.1);
  assert.equal(overlayValue({ rates: {}, exceptions: 2 }, 'failures'), 0.5);
  assert.equal(overlayValue({ rates: {} }, 'failures'), 0);
  assert.equal(heat(0), 'hsl(130 60% 88%)');
  assert.equal(heat(1), 'hsl(0 60% 88%)');
});

test('instancesOf lists a component\'s instances with their container', () => {
  const phys = { containers: [{ id: 1, instances: [{ name: 'count/0', task: 4 }, { name: 'split/0', task: 2 }] }, { id: 2, instances: [{ name: 'count/1', task: 5 }] }] };
  assert.deepEqual(instancesOf(phys, 'count').map((i) => [i.container, i.task]), [[1, 4], [2, 5]]);
  assert.equal(instancesOf(phys).length, 3);
  assert.deepEqual(instancesOf(undefined, 'x'), []);
});

test('sparkPoints scales to the box, max at the top', () => {
  assert.equal(sparkPoints([0, 5, 10], 100, 20), '0.0,20.0 50.0,10.0 100.0,0.0');
  assert.equal(sparkPoints([], 100, 20), '');
  assert.equal(sparkPoints([0, 0], 10, 10), '0.0,10.0 10.0,10.0');
});

test('toBase64 encodes bytes, including large buffers', () => {
  assert.equal(toBase64(new Uint8Array([0, 97, 115, 109]).buffer), 'AGFzbQ==');
  const big = new Uint8Array(100000).map((_, i) => i % 251);
  assert.equal(toBase64(big.buffer), Buffer.from(big).toString('base64'));
});

test('formatLogLine shortens the host\'s JSON lines', () => {
  const l = '{"time":"2026-12-04T01:59:37.837856118Z","level":"INFO","msg":"instance started","topology":"trap","container":1,"component":"probe","task":2,"note":"two words"}';
  assert.equal(formatLogLine(l), '01:59:37.837 INFO  instance started component=probe task=2 note="two words"');
  assert.equal(formatLogLine('plain text'), 'plain text');
  assert.equal(formatLogLine('[1,2]'), '[1,2]');
  assert.equal(formatLogLine('{"level":"WARN","msg":"m","n":1.5}'), 'WARN  m n=1.5');
});

test('formatLogLine names an instance component/index', () => {
  const l = '{"time":"2026-12-04T01:59:37.837Z","level":"INFO","msg":"instance started","component":"count","task":3,"index":1}';
  assert.equal(formatLogLine(l, { 3: 'count/1' }), '01:59:37.837 INFO  instance started instance=count/1 index=1');
  // A task the names give to another component keeps its fields.
  assert.equal(formatLogLine(l, { 3: 'split/0' }), '01:59:37.837 INFO  instance started component=count task=3 index=1');
});

test('taskNames and byInstance', () => {
  const physical = { containers: [{ id: 1, instances: [{ name: 'count/10', task: 12 }, { name: 'count/2', task: 4 }] }] };
  assert.deepEqual(taskNames(physical), { 12: 'count/10', 4: 'count/2' });
  assert.deepEqual(['count/10', 'split/0', 'count/2'].sort(byInstance), ['count/2', 'count/10', 'split/0']);
});

test('admin routes round-trip; an unknown section is the tenants page', () => {
  for (const section of adminSections) assert.deepEqual(parseRoute(routeHash({ page: 'admin', section })), { page: 'admin', section });
  assert.deepEqual(parseRoute('#/admin'), { page: 'admin', section: 'tenants' });
  assert.deepEqual(parseRoute('#/admin/nope'), { page: 'admin', section: 'tenants' });
});

test('a login link\'s token is read from the fragment', () => {
  assert.equal(tokenFromHash('#token=ardea_ab12_xyz'), 'ardea_ab12_xyz');
  assert.equal(tokenFromHash('#token=ardea_ab12_xyz&next=1'), 'ardea_ab12_xyz');
  assert.equal(tokenFromHash('#token=a%2Bb'), 'a+b');
  for (const h of ['', '#/', '#/t/wc', '#token=', '#xtoken=a', '#token=%E0%A4%A']) assert.equal(tokenFromHash(h), null, h);
});

test('scopes are ordered; metrics reaches nothing of the UI', () => {
  assert.ok(scopeAllows('read', 'read'));
  assert.ok(!scopeAllows('read', 'operate'));
  assert.ok(scopeAllows('operate', 'operate') && !scopeAllows('operate', 'deploy'));
  assert.ok(scopeAllows('deploy', 'operate') && scopeAllows('deploy', 'deploy') && !scopeAllows('deploy', 'admin'));
  for (const need of ['read', 'operate', 'deploy', 'admin']) {
    assert.ok(scopeAllows('admin', need));
    assert.ok(!scopeAllows('metrics', need));
    assert.ok(!scopeAllows(undefined, need));
  }
  assert.ok(!scopeAllows('admin', 'bogus'));
  assert.equal(actionScopes.kill, 'deploy');
  assert.equal(actionScopes.rollback, 'operate');
});
