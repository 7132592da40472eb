// End-to-end tests of the web UI in headless Chromium, against a real
// daemon running the endless word count (`ardea demo`) and a topology whose
// bolt traps. go test ./cmd/ardea -run TestUIInChromium starts them and
// runs this file with:
//   ARDEA_UI         the daemon's address (http://127.0.0.1:PORT)
//   ARDEA_SWAP       a .wasm module to swap count to
//   ARDEA_SHOTS      where screenshots go (one per test)
//   CHROMIUM         the browser (default /usr/bin/chromium)
//   ARDEA_TOKEN      a token to log in with (through a login link, as
//                    `ardea demo` prints it); unset for a daemon that takes none
// Every wait polls the page (Playwright's expect-style polling); nothing
// sleeps for a fixed time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const base = process.env.ARDEA_UI;
const swapModule = process.env.ARDEA_SWAP;
const shots = process.env.ARDEA_SHOTS || 'test-output';
const timeout = 90_000;
assert.ok(base, 'ARDEA_UI is not set');
mkdirSync(shots, { recursive: true });

let browser, page;

before(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(timeout);
  page.on('pageerror', (e) => console.error('page error:', e));
  const token = process.env.ARDEA_TOKEN;
  if (token) {
    // The login link: the page keeps the token in this tab's sessionStorage.
    await page.goto(`${base}/#token=${encodeURIComponent(token)}`);
    await page.locator('#who').waitFor({ state: 'visible' });
  }
});

after(async () => { await browser?.close(); });

const shot = (name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });

// parseNum reads the UI's number format (12, 1.5k, 2.0M, –).
function parseNum(s) {
  const m = /^(-?[\d.]+)([kMG]?)/.exec(String(s).trim());
  if (!m) return NaN;
  return Number(m[1]) * ({ '': 1, k: 1e3, M: 1e6, G: 1e9 })[m[2]];
}

// until polls fn (in Node) until it returns a truthy value.
async function until(what, fn) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await page.waitForTimeout(200); // polling interval
  }
}

const cell = (comp, field) => page.locator(`#counters tr[data-component="${comp}"] td[data-field="${field}"]`).textContent();

async function confirmDialog() {
  const dlg = page.locator('dialog#confirm');
  await dlg.waitFor({ state: 'visible' });
  await page.locator('#confirm-ok').click();
  await dlg.waitFor({ state: 'hidden' });
}

test('the list shows the word count, running', async () => {
  await page.goto(`${base}/`);
  const row = page.locator('#rows tr[data-topology="wordcount"]');
  await row.waitFor();
  await until('state running', async () => (await row.locator('.badge').first().textContent()) === 'running');
  await page.locator('#filter').fill('zzz');
  await until('the filter hides it', async () => (await page.locator('#rows tr[data-topology]').count()) === 0);
  await page.locator('#filter').fill('word');
  await row.waitFor();
  await shot('list');
});

test('the graph shows the four components and rates rise', async () => {
  await page.goto(`${base}/#/t/wordcount`);
  await until('four nodes', async () => (await page.locator('#graph a.node').count()) === 4);
  const names = await page.locator('#graph a.node').evaluateAll((ns) => ns.map((n) => n.dataset.component).sort());
  assert.deepEqual(names, ['count', 'lines', 'out', 'split']);
  assert.equal(await page.locator('#graph g.edge').count(), 3);
  const first = parseNum(await cell('count', 'execute-rate'));
  await until('count executing', async () => parseNum(await cell('count', 'execute-rate')) > 0);
  await until('the 10 min window counting up', async () => {
    const t = await page.locator('#counters tr[data-component="count"] td').nth(4).textContent();
    return parseNum(t) > 0;
  });
  assert.ok(first >= 0);
  await shot('topology');
});

test('deactivate from the UI: state changes and the rate drops to zero', async () => {
  await page.locator('#deactivate').click();
  await confirmDialog();
  await until('state paused', async () => (await page.locator('#state').textContent()) === 'paused');
  await until('the spout rate at zero', async () => parseNum(await cell('lines', 'emit-rate')) === 0);
  await until('count idle', async () => parseNum(await cell('count', 'execute-rate')) === 0);
  await shot('deactivated');
});

test('activate: running again, rates back', async () => {
  await page.locator('#activate').click();
  await confirmDialog();
  await until('state running', async () => (await page.locator('#state').textContent()) === 'running');
  await until('the spout emitting', async () => parseNum(await cell('lines', 'emit-rate')) > 0);
  await shot('activated');
});

test('change the parallelism of count to 3 and see three instances', async () => {
  await page.locator('#counters a', { hasText: 'count' }).click();
  await page.waitForURL(/#\/t\/wordcount\/c\/count$/);
  await until('the form filled', async () => (await page.locator('#parallelism').inputValue()) === '2');
  await page.locator('#parallelism').fill('3');
  await page.getByRole('button', { name: 'Change parallelism' }).click();
  await confirmDialog();
  await until('three instances reporting', async () => (await page.locator('#instances tr[data-task]').count()) === 3);
  await until('the plan says ×3', async () => (await page.locator('#comp-info').textContent()).includes('×3'));
  await until('three instances placed', async () => (await page.locator('#physical tr[data-instance^="count/"]').count()) === 3);
  await shot('parallelism-3');
});

test('swap count, see the new version, roll back', async () => {
  assert.ok(swapModule, 'ARDEA_SWAP is not set');
  const before = await page.locator('#comp-info').getAttribute('data-version');
  assert.ok(before);
  await page.locator('#module').setInputFiles(swapModule);
  await page.getByRole('button', { name: 'Swap module' }).click();
  await confirmDialog();
  await until('a new version', async () => {
    const v = await page.locator('#comp-info').getAttribute('data-version');
    return v && v !== before;
  });
  const swapped = await page.locator('#comp-info').getAttribute('data-version');
  // One instance's log tail.
  await page.locator('#log-of').selectOption('count/0');
  await until('count/0 log lines', async () => {
    const text = await page.locator('#log').textContent();
    return text.includes('instance=count/0') && !/instance=count\/[12]\b/.test(text);
  });
  await page.goto(`${base}/#/t/wordcount`);
  await until('the graph shows it', async () => {
    const v = await page.locator('#graph a.node[data-component="count"]').getAttribute('data-version');
    return v && v !== before;
  });
  await shot('swapped');

  // Roll back: the previous version returns.
  await page.goto(`${base}/#/t/wordcount/c/count`);
  await until('the page loaded', async () => (await page.locator('#comp-info').getAttribute('data-version')) === swapped);
  await page.getByRole('button', { name: 'Roll back' }).click();
  await confirmDialog();
  await until('the old version back', async () => (await page.locator('#comp-info').getAttribute('data-version')) === before);
  await shot('rolled-back');
});

test('a trapping bolt\'s exception appears with its count', async () => {
  await page.goto(`${base}/#/t/trap`);
  const count = page.locator('#exceptions tr[data-component="probe"] td[data-field="count"]');
  await until('the exception listed', async () => parseNum(await count.textContent()) >= 1);
  const msg = await page.locator('#exceptions tr[data-component="probe"]').textContent();
  assert.match(msg, /probe panic/);
  await until('the node flags it', async () => (await page.locator('#graph a.node[data-component="probe"] [data-field="rate"]').textContent()).includes('exc'));
  await shot('exceptions');
  // The component page lists them per instance.
  await page.goto(`${base}/#/t/trap/c/probe`);
  await until('the instance\'s exception', async () => {
    const row = page.locator('#exceptions tr[data-component="probe"]').first();
    return (await row.count()) > 0 && /task \d+/.test(await row.textContent()) && /probe panic/.test(await row.textContent());
  });
  await shot('instance-exceptions');
});

test('narrow window and keyboard: the page works at 420 px and nodes take focus', async () => {
  await page.setViewportSize({ width: 420, height: 800 });
  await page.goto(`${base}/#/t/wordcount`);
  await until('four nodes', async () => (await page.locator('#graph a.node').count()) === 4);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow}px`);
  await page.locator('#graph a.node').first().focus();
  assert.equal(await page.evaluate(() => document.activeElement?.dataset?.component), 'lines');
  // The page refreshes the graph every second: the focused node keeps the
  // focus across a refresh (its element is a new one).
  await page.evaluate(() => { document.activeElement.dataset.before = 'refresh'; });
  await until('a refresh of the graph', async () => (await page.locator('#graph a.node[data-before]').count()) === 0);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset?.component), 'lines');
  await page.keyboard.press('Enter');
  await page.waitForURL(/#\/t\/wordcount\/c\/lines$/);
  await shot('narrow');
});
