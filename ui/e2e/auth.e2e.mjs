// End-to-end tests of the UI's login, scopes and admin pages in headless
// Chromium, against an API behind Ardea's security layer: ui's
// TestUILoginInChromium (the real token store, guard, tracker, admin API,
// quotas and audit log on an embedded NATS server) or cmd/ardea's
// TestUIInChromium (`ardea demo`). Environment:
//   ARDEA_UI                 the server (http://127.0.0.1:PORT)
//   ARDEA_TOKEN              an admin token
//   ARDEA_READ_TOKEN         a read token of tenant A
//   ARDEA_OPERATE_TOKEN      an operate token of tenant A (optional)
//   ARDEA_DEPLOY_TOKEN       a deploy token of tenant A (optional)
//   ARDEA_TENANT_A_TOPOLOGY  a topology of tenant A
//   ARDEA_TENANT_B_TOPOLOGY  a topology of another tenant, B (optional)
//   ARDEA_TENANT_B_TOKEN     a token of tenant B (optional)
//   ARDEA_SHOTS              where screenshots go
//   CHROMIUM                 the browser (default /usr/bin/chromium)
// Each test opens its own browser context (its own sessionStorage), so
// logins do not leak between tests. Waits poll; nothing sleeps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const env = process.env;
const base = env.ARDEA_UI;
const admin = env.ARDEA_TOKEN;
const readTok = env.ARDEA_READ_TOKEN;
const topoA = env.ARDEA_TENANT_A_TOPOLOGY;
const topoB = env.ARDEA_TENANT_B_TOPOLOGY;
const shots = env.ARDEA_SHOTS || 'test-output/auth';
const timeout = 60_000;
for (const k of ['ARDEA_UI', 'ARDEA_TOKEN', 'ARDEA_READ_TOKEN', 'ARDEA_TENANT_A_TOPOLOGY']) assert.ok(env[k], `${k} is not set`);
mkdirSync(shots, { recursive: true });

let browser;
before(async () => {
  browser = await chromium.launch({ executablePath: env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
});
after(async () => { await browser?.close(); });

// open starts a fresh context (no stored token) and watches the page for
// script errors and CSP violations, which fail the test at close.
async function open() {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(timeout);
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.problems = problems;
  page.done = async (name) => {
    if (name) await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
    await ctx.close();
    assert.deepEqual(problems, [], 'no script errors or CSP violations');
  };
  return page;
}

// until polls fn until it returns a truthy value.
async function until(page, what, fn) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await page.waitForTimeout(100); // polling interval
  }
}

// watchRequests records the page's API requests with their headers.
function watchRequests(page) {
  const seen = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/api/')) seen.push({ method: r.method(), path: u.pathname, query: u.search, headers: r.headers(), body: r.postData() });
  });
  return seen;
}

// checkRequests asserts the API's rules on what the page sent: the token in
// the Authorization header only (never the URL), JSON on every
// state-changing call, and only the events stream with a ticket instead.
function checkRequests(seen) {
  assert.ok(seen.length > 0);
  for (const r of seen) {
    const what = `${r.method} ${r.path}${r.query}`;
    assert.doesNotMatch(r.query, /token=/, `${what}: a token in the URL`);
    if (r.path === '/api/v1/events') {
      assert.match(r.query, /ticket=/, `${what}: the events stream without a ticket`);
      continue;
    }
    assert.match(r.headers.authorization ?? '', /^Bearer ardea_/, `${what}: no Authorization header`);
    if (r.method !== 'GET') {
      assert.equal(r.headers['content-type'], 'application/json', `${what}: not JSON`);
      assert.doesNotThrow(() => JSON.parse(r.body), `${what}: the body is not JSON`);
    }
  }
}

// loginWith logs in through the form.
async function loginWith(page, token) {
  await page.goto(`${base}/`);
  await page.locator('#login-token').fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.locator('#who').waitFor({ state: 'visible' });
}

async function confirmDialog(page) {
  const dlg = page.locator('dialog#confirm');
  await dlg.waitFor({ state: 'visible' });
  await page.locator('#confirm-ok').click();
  await dlg.waitFor({ state: 'hidden' });
}

// apiCall calls the API from Node with a token (as the CLI does).
async function apiCall(token, method, path, body) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(method === 'GET' ? {} : { 'Content-Type': 'application/json' }) },
    body: method === 'GET' ? undefined : JSON.stringify(body ?? {}),
  });
  const data = await res.json().catch(() => null);
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
}

test('without a token the page is the login form, and nothing else loads', async () => {
  const page = await open();
  const apiCalls = [];
  page.on('request', (r) => { if (new URL(r.url()).pathname.startsWith('/api/')) apiCalls.push(r.url()); });
  await page.goto(`${base}/#/t/${encodeURIComponent(topoA)}`);
  await page.locator('#login-token').waitFor();
  assert.equal(await page.locator('#who').isVisible(), false);
  assert.equal(await page.locator('#logout').isVisible(), false);
  assert.equal(await page.locator('#graph, #rows').count(), 0);
  assert.deepEqual(apiCalls, [], 'no API call without a token');
  await page.done('login');
});

test('a wrong token is refused with a message and not kept', async () => {
  const page = await open();
  await page.goto(`${base}/`);
  await page.locator('#login-token').fill('ardea_0000000000000000_notavalidsecretatall');
  await page.getByRole('button', { name: 'Log in' }).click();
  await until(page, 'the refusal', async () => /refused/i.test(await page.locator('#login-error').textContent()));
  assert.equal(await page.evaluate(() => sessionStorage.getItem('ardea.token')), null);
  assert.equal(await page.locator('#who').isVisible(), false);
  await page.done('login-refused');
});

test('a login link: the token moves to sessionStorage and leaves the address bar', async () => {
  const page = await open();
  await page.goto(`${base}/#token=${encodeURIComponent(admin)}`);
  await until(page, 'logged in as admin', async () => (await page.locator('#who').getAttribute('data-scope')) === 'admin');
  assert.doesNotMatch(page.url(), /token/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('ardea.token')), admin);
  assert.equal(await page.evaluate(() => localStorage.length), 0, 'nothing in localStorage');
  assert.equal(await page.evaluate(() => document.cookie), '', 'no cookie');
  assert.ok(await page.locator('#admin-link').isVisible());
  // The header with everything in it still fits a narrow window.
  await page.setViewportSize({ width: 420, height: 800 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow}px`);
  await page.screenshot({ path: join(shots, 'narrow-header.png') });
  await page.setViewportSize({ width: 1280, height: 800 });
  // A reload keeps the session (same tab).
  await page.reload();
  await until(page, 'still logged in', async () => (await page.locator('#who').getAttribute('data-scope')) === 'admin');
  // Logging out forgets the token.
  await page.locator('#logout').click();
  await page.locator('#login-token').waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('ardea.token')), null);
  await page.done();
});

test('the admin pages: tenants, tokens (secret once), quotas and usage, audit log', async () => {
  const page = await open();
  const seen = watchRequests(page);
  await loginWith(page, admin);
  await page.locator('#admin-link').click();
  await page.waitForURL(/#\/admin\/tenants$/);
  await until(page, 'the tenants listed', async () => (await page.locator('#tenants tr[data-tenant="default"]').count()) === 1);

  // Create a tenant.
  const tn = `e2e-${Date.now().toString(36)}`;
  await page.locator('#tenant-name').fill(tn);
  await page.getByRole('button', { name: 'Create tenant' }).click();
  await page.locator(`#tenants tr[data-tenant="${tn}"]`).waitFor();
  for (const section of ['tokens', 'quotas', 'audit', 'tenants']) {
    await page.locator('#admin-nav a', { hasText: new RegExp(`^${section}$`, 'i') }).click();
    await page.waitForURL(new RegExp(`#/admin/${section}$`));
  }
  await page.locator(`#tenants tr[data-tenant="${tn}"]`).waitFor();
  // Delete it again: a DELETE with a JSON body of {}.
  await page.locator(`#tenants tr[data-tenant="${tn}"]`).getByRole('button', { name: 'Delete' }).click();
  await confirmDialog(page);
  await until(page, 'the tenant gone', async () => (await page.locator(`#tenants tr[data-tenant="${tn}"]`).count()) === 0);
  assert.ok(seen.some((r) => r.method === 'POST' && r.path === '/api/v1/tenants'));
  assert.ok(seen.some((r) => r.method === 'DELETE' && r.path === `/api/v1/tenants/${tn}`));
  checkRequests(seen);
  await page.done('admin-tenants');
});

test('tokens: create one (its secret shown once, and it works), revoke it', async () => {
  const page = await open();
  await loginWith(page, admin);
  const tn = `e2t-${Date.now().toString(36)}`;
  await apiCall(admin, 'POST', '/tenants', { name: tn });
  await page.goto(`${base}/#/admin/tokens`);
  await until(page, 'the tenant offered', async () => (await page.locator(`#token-tenant option`, { hasText: tn }).count()) === 1);
  await page.locator('#token-tenant').selectOption(tn);
  await page.locator('#token-scope').selectOption('read');
  await page.locator('#token-name').fill('e2e');
  await page.locator('#token-expires').fill('1h');
  await page.getByRole('button', { name: 'Create token' }).click();
  await page.locator('#token-new').waitFor({ state: 'visible' });
  const secret = (await page.locator('#token-secret').textContent()).trim();
  assert.match(secret, /^ardea_/);
  const me = await apiCall(secret, 'GET', '/whoami');
  assert.equal(me.tenant, tn);
  assert.equal(me.scope, 'read');
  const row = page.locator(`#tokens tr[data-token="${me.token_id}"]`);
  await row.waitFor();
  assert.doesNotMatch(await page.locator('#tokens').textContent(), new RegExp(secret.slice(-12)), 'the list never shows a secret');
  await shot(page, 'admin-tokens');
  await row.getByRole('button', { name: 'Revoke' }).click();
  await confirmDialog(page);
  await until(page, 'revoked', async () => (await row.getAttribute('data-state')) === 'revoked');
  const res = await fetch(`${base}/api/v1/whoami`, { headers: { Authorization: `Bearer ${secret}` } });
  assert.equal(res.status, 401, 'the revoked token is refused');
  // Delete the tenant from its page.
  await page.goto(`${base}/#/admin/tenants`);
  const trow = page.locator(`#tenants tr[data-tenant="${tn}"]`);
  await trow.getByRole('button', { name: 'Delete' }).click();
  await confirmDialog(page);
  await until(page, 'the tenant gone', async () => (await trow.count()) === 0);
  await page.done();
});

test('quotas and usage of a tenant; an override saved', async () => {
  const page = await open();
  await loginWith(page, admin);
  const me = await apiCall(readTok, 'GET', '/whoami');
  await page.goto(`${base}/#/admin/tenants`);
  // The usage, where the server reports it (the quotas answer's usage).
  const usage = (await apiCall(admin, 'GET', `/tenants/${encodeURIComponent(me.tenant)}/quotas`)).usage;
  const trow = page.locator(`#tenants tr[data-tenant="${me.tenant}"]`);
  await trow.waitFor();
  if (usage) await until(page, 'tenant A\'s usage in the list', async () => /^\d/.test(await trow.locator('[data-field="topologies"]').textContent()));
  await trow.getByRole('button', { name: 'Quotas & usage' }).click();
  await page.waitForURL(/#\/admin\/quotas$/);
  await until(page, 'tenant A selected', async () => (await page.locator('#quota-tenant').inputValue()) === me.tenant);
  await until(page, 'nine quotas', async () => (await page.locator('#quotas tr[data-quota]').count()) === 9);
  if (usage) await until(page, 'its topologies counted', async () => Number(await page.locator('#quotas tr[data-quota="topologies"] [data-field="usage"]').textContent()) >= 1);
  await page.locator('input[data-quota-field="instances"]').fill('64');
  await page.locator('input[data-quota-field="bytes_per_second"]').fill('16MiB');
  await page.getByRole('button', { name: 'Save overrides' }).click();
  await until(page, 'the override effective', async () => (await page.locator('#quotas tr[data-quota="instances"] [data-field="effective"]').textContent()) === '64');
  const q = await apiCall(admin, 'GET', `/tenants/${encodeURIComponent(me.tenant)}/quotas`);
  assert.equal(q.quotas.instances, 64);
  assert.equal(q.quotas.bytes_per_second, 16 << 20);
  await shot(page, 'admin-quotas');
  // Back to the deployment file's.
  await page.locator('input[data-quota-field="instances"]').fill('');
  await page.locator('input[data-quota-field="bytes_per_second"]').fill('');
  await page.getByRole('button', { name: 'Save overrides' }).click();
  await until(page, 'the override gone', async () => (await page.locator('input[data-quota-field="instances"]').inputValue()) === '');
  await page.done();
});

test('the audit log: newest first, filtered by tenant', async () => {
  const page = await open();
  await loginWith(page, admin);
  const tn = `e2a-${Date.now().toString(36)}`;
  await apiCall(admin, 'POST', '/tenants', { name: tn });
  await apiCall(admin, 'DELETE', `/tenants/${tn}`);
  await page.goto(`${base}/#/admin/audit`);
  await until(page, 'records', async () => (await page.locator('#audit tr[data-action]').count()) >= 2);
  const actions = await page.locator('#audit tr[data-action]').evaluateAll((rs) => rs.map((r) => r.dataset.action));
  const del = actions.indexOf('tenant.delete');
  const add = actions.indexOf('tenant.create');
  assert.ok(del >= 0 && add > del, `newest first: ${actions}`);
  // Filter: the read token's tenant has no tenant.create of this test.
  const me = await apiCall(readTok, 'GET', '/whoami');
  await page.locator('#audit-tenant').selectOption(me.tenant);
  await page.getByRole('button', { name: 'Show' }).click();
  await until(page, 'filtered', async () => {
    const ts = await page.locator('#audit tr[data-action] td:nth-child(3)').allTextContents();
    return ts.every((t) => t === me.tenant);
  });
  await page.locator('#audit-since').fill('1h');
  await page.getByRole('button', { name: 'Show' }).click();
  await shot(page, 'admin-audit');
  await page.done();
});

test('a read token: the tenant shown, no action buttons, no admin pages', async () => {
  const page = await open();
  await loginWith(page, readTok);
  const me = await apiCall(readTok, 'GET', '/whoami');
  assert.equal(await page.locator('#who').textContent(), `${me.tenant} · read`);
  assert.equal(await page.locator('#admin-link').isVisible(), false);
  await page.goto(`${base}/#/t/${encodeURIComponent(topoA)}`);
  await until(page, 'the graph', async () => (await page.locator('#graph a.node').count()) > 0);
  await until(page, 'the containers', async () => (await page.locator('#physical tr[data-container]').count()) > 0);
  for (const sel of ['#activate', '#deactivate', '#kill', '#dlq-replay', 'button[data-restart]']) {
    assert.equal(await page.locator(sel).count(), 0, `${sel} offered to a read token`);
  }
  const comp = await page.locator('#graph a.node').last().getAttribute('data-component');
  await page.goto(`${base}/#/t/${encodeURIComponent(topoA)}/c/${encodeURIComponent(comp)}`);
  await until(page, 'the component', async () => (await page.locator('#comp-info').textContent()) !== '');
  for (const sel of ['#scale', '#swap', '#rollback', '#parallelism']) {
    assert.equal(await page.locator(sel).count(), 0, `${sel} offered to a read token`);
  }
  await page.goto(`${base}/#/admin/tenants`);
  await page.locator('#admin-refused').waitFor();
  assert.equal(await page.locator('#tenants').count(), 0);
  await page.done('read-token');
});

test('an operate token: activate, deactivate, restart and roll back; not kill, swap or admin', async () => {
  if (!env.ARDEA_OPERATE_TOKEN) return;
  const page = await open();
  await loginWith(page, env.ARDEA_OPERATE_TOKEN);
  await page.goto(`${base}/#/t/${encodeURIComponent(topoA)}`);
  await until(page, 'the state', async () => (await page.locator('#state').textContent()) === 'running');
  await until(page, 'a restart button', async () => (await page.locator('button[data-restart]').count()) > 0);
  assert.equal(await page.locator('#kill').count(), 0);
  assert.equal(await page.locator('#dlq-replay').count(), 0);
  assert.equal(await page.locator('#admin-link').isVisible(), false);
  await page.locator('#deactivate').click();
  await confirmDialog(page);
  await until(page, 'done', async () => /deactivate .*: done/.test(await page.locator('#toast').textContent()));
  const comp = await page.locator('#graph a.node').last().getAttribute('data-component');
  await page.goto(`${base}/#/t/${encodeURIComponent(topoA)}/c/${encodeURIComponent(comp)}`);
  await page.locator('#parallelism').waitFor();
  assert.equal(await page.locator('#module').count(), 0, 'swap offered to an operate token');
  assert.equal(await page.locator('#rollback').count(), 1);
  await page.done('operate-token');
});

test('a deploy token: kill, swap and dead-letter replay offered; no admin pages', async () => {
  if (!env.ARDEA_DEPLOY_TOKEN) return;
  const page = await open();
  await loginWith(page, env.ARDEA_DEPLOY_TOKEN);
  await page.goto(`${base}/#/t/${encodeURIComponent(topoA)}`);
  for (const sel of ['#activate', '#deactivate', '#kill', '#dlq-replay']) await page.locator(sel).waitFor();
  assert.equal(await page.locator('#admin-link').isVisible(), false);
  const comp = await page.locator('#graph a.node').last().getAttribute('data-component');
  await page.goto(`${base}/#/t/${encodeURIComponent(topoA)}/c/${encodeURIComponent(comp)}`);
  await page.locator('#module').waitFor({ state: 'attached' });
  await page.done();
});

test('tenant A does not see tenant B\'s topology', async (t) => {
  if (!topoB) { t.skip('ARDEA_TENANT_B_TOPOLOGY is not set'); return; }
  const page = await open();
  await loginWith(page, readTok);
  await page.locator(`#rows tr[data-topology="${topoA}"]`).waitFor();
  assert.equal(await page.locator(`#rows tr[data-topology="${topoB}"]`).count(), 0);
  // B's topology is answered as a missing one: the same words, no page.
  const missing = `zz-missing-${Date.now().toString(36)}`;
  await page.goto(`${base}/#/t/${missing}`);
  const notFound = await until(page, 'a missing topology\'s error', async () => page.locator('#topo-error').textContent());
  await page.goto(`${base}/#/t/${encodeURIComponent(topoB)}`);
  const want = notFound.replaceAll(missing, topoB);
  await until(page, `"${want}"`, async () => (await page.locator('#topo-error').textContent()) === want);
  assert.equal(await page.locator('#graph a.node').count(), 0);
  await page.screenshot({ path: join(shots, 'tenant-isolation.png'), fullPage: true });
  // The API says the same (404, the same message) to A's token.
  const info = async (name) => {
    const res = await fetch(`${base}/api/v1/topologies/${name}/info`, { headers: { Authorization: `Bearer ${readTok}` } });
    return [res.status, (await res.json()).message];
  };
  const [codeB, msgB] = await info(topoB);
  const [codeMissing, msgMissing] = await info(missing);
  assert.equal(codeB, 404);
  assert.equal(codeMissing, 404);
  assert.equal(msgB, msgMissing.replaceAll(missing, topoB));
  await page.done();
  // Tenant B's own token sees its topology, and not A's.
  if (env.ARDEA_TENANT_B_TOKEN) {
    const pb = await open();
    await loginWith(pb, env.ARDEA_TENANT_B_TOKEN);
    await pb.locator(`#rows tr[data-topology="${topoB}"]`).waitFor();
    assert.equal(await pb.locator(`#rows tr[data-topology="${topoA}"]`).count(), 0);
    await pb.done('tenant-b');
  }
});

test('the events stream: a new ticket on every reconnect', async () => {
  const page = await open();
  const seen = watchRequests(page);
  let aborted = 0;
  // The first two connections fail (as a dropped stream does); the page
  // must ask for a new ticket each time, since a ticket is good once.
  await page.route('**/api/v1/events?*', (route) => (aborted++ < 2 ? route.abort() : route.continue()));
  await loginWith(page, readTok);
  await page.locator(`#rows tr[data-topology="${topoA}"]`).waitFor();
  await until(page, 'live', async () => /^live/.test(await page.locator('#conn').textContent()));
  const tickets = seen.filter((r) => r.path === '/api/v1/events').map((r) => new URLSearchParams(r.query).get('ticket'));
  assert.ok(tickets.length >= 3, `${tickets.length} connections`);
  assert.equal(new Set(tickets).size, tickets.length, 'a ticket was used twice');
  assert.equal(seen.filter((r) => r.method === 'POST' && r.path === '/api/v1/tickets').length, tickets.length);
  checkRequests(seen);
  await page.done();
});

test('a token revoked during the session returns the page to the login form', async () => {
  const page = await open();
  const me = await apiCall(readTok, 'GET', '/whoami');
  const { secret, id } = await apiCall(admin, 'POST', '/tokens', { tenant: me.tenant, scope: 'read', name: 'e2e-revoked', expires_in: '1h' });
  await loginWith(page, secret);
  await page.locator(`#rows tr[data-topology="${topoA}"]`).waitFor();
  await apiCall(admin, 'DELETE', `/tokens/${id}`);
  // The next call (a new events ticket, on opening a topology) is refused.
  await page.evaluate((h) => { location.hash = h; }, `#/t/${encodeURIComponent(topoA)}`);
  await until(page, 'signed out', async () => /Signed out/.test(await page.locator('#login-error').textContent()));
  assert.equal(await page.evaluate(() => sessionStorage.getItem('ardea.token')), null);
  await page.done('revoked');
});

function shot(page, name) {
  return page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}
