#!/usr/bin/env node
// check_report.js: open fleetsim report.html files in headless Chromium and
// check that they load cleanly and that their SVG plots are drawn.
//
//   node check_report.js [--timeout SECONDS] FILE.html...
//
// For each file (opened as a file:// URL, one fresh page each, one browser
// for all) it fails on:
//   - console messages of type error, page errors (uncaught exceptions);
//   - any request to a URL that is not file: (or data:), any failed request:
//     a self-contained page requests nothing but itself;
//   - no svg.plot in the page;
//   - an svg.plot whose data-points is not a positive integer, that holds no
//     circle.pt or path.line, or whose rendered bounding box is empty;
//   - a circle.pt without finite cx/cy, a path.line whose d is empty or holds
//     anything but path commands and finite numbers (NaN, Infinity, ...).
// Prints one line per file, "OK FILE: ..." or "FAIL FILE: reason; reason",
// and exits 0 when every file passes, 1 when one fails, 2 on a usage error.
//
// playwright-core comes from npm (NODE_PATH, see run_browser_test.sh); the
// browser is Debian's chromium ($CHROMIUM, default /usr/bin/chromium), never
// a downloaded one. Each run uses a fresh, temporary user-data folder.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { pathToFileURL } = require('url');

function usage(msg) {
  if (msg) process.stderr.write(`check_report.js: ${msg}\n`);
  process.stderr.write('usage: check_report.js [--timeout SECONDS] FILE.html...\n');
  process.exit(2);
}

let timeoutS = 60;
const files = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; ++i) {
  const a = argv[i];
  if (a === '-h' || a === '--help') usage();
  if (a === '--timeout') {
    const v = Number(argv[++i]);
    if (!Number.isFinite(v) || v <= 0) usage('--timeout needs a positive number of seconds');
    timeoutS = v;
  } else if (a.startsWith('-') && a !== '-') {
    usage(`unknown option ${a}`);
  } else {
    files.push(a);
  }
}
if (files.length === 0) usage('no HTML file given');

let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch (e) {
  process.stderr.write('check_report.js: cannot load playwright-core (install it with npm and set NODE_PATH): ' +
                       e.message + '\n');
  process.exit(2);
}

const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const launchArgs = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                    '--disable-background-networking', '--disable-component-update', '--disable-sync',
                    '--disable-dev-shm-usage'];
const timeoutMs = Math.round(timeoutS * 1000);

// Runs inside the page: everything the plots' checks need, as plain data.
function inspectPlots() {
  const out = { plots: [] };
  const num = /[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?/g;
  const finiteAttr = (el, name) => {
    const v = el.getAttribute(name);
    if (v === null || v.trim() === '') return `${name} missing`;
    const n = Number(v.trim().replace(/(px|%)$/, ''));
    return Number.isFinite(n) ? null : `${name}="${v}"`;
  };
  const badPath = (d) => {
    if (d === null || d.trim() === '') return 'd missing';
    const rest = d.replace(num, ' ');
    if (!/^[\sMmLlHhVvCcSsQqTtAaZz,]*$/.test(rest)) return `d="${d.length > 60 ? d.slice(0, 60) + '...' : d}"`;
    if (!/^\s*[Mm]/.test(d)) return `d does not start with M: "${d.slice(0, 30)}"`;
    return null;
  };
  document.querySelectorAll('svg.plot').forEach((svg, i) => {
    const r = svg.getBoundingClientRect();
    const title = svg.getAttribute('aria-label') || svg.getAttribute('id') ||
                  (svg.querySelector(':scope > title') ? svg.querySelector(':scope > title').textContent.trim() : '');
    const p = {
      index: i,
      title: title.slice(0, 40),
      dataPoints: svg.getAttribute('data-points'),
      width: r.width,
      height: r.height,
      circles: 0,
      lines: 0,
      bad: [],
    };
    svg.querySelectorAll('circle.pt').forEach((c) => {
      p.circles++;
      for (const a of ['cx', 'cy']) {
        const e = finiteAttr(c, a);
        if (e) p.bad.push(`circle.pt #${p.circles - 1} ${e}`);
      }
    });
    svg.querySelectorAll('path.line').forEach((l) => {
      p.lines++;
      const e = badPath(l.getAttribute('d'));
      if (e) p.bad.push(`path.line #${p.lines - 1} ${e}`);
    });
    out.plots.push(p);
  });
  return out;
}

async function checkFile(context, file) {
  const reasons = [];
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
    return { ok: false, reasons: ['no such file'] };
  }
  const url = pathToFileURL(path.resolve(file)).href;
  const page = await context.newPage();
  page.setDefaultTimeout(timeoutMs);
  page.on('console', (m) => {
    if (m.type() === 'error') reasons.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => reasons.push(`page error: ${e.message || e}`));
  page.on('crash', () => reasons.push('page crashed'));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('file:') && !u.startsWith('data:')) reasons.push(`request to a non-file URL: ${u}`);
  });
  page.on('requestfailed', (r) => {
    const f = r.failure();
    reasons.push(`failed request: ${r.url().slice(0, 120)} (${f ? f.errorText : 'failed'})`);
  });
  let summary = '';
  try {
    await page.goto(url, { waitUntil: 'load', timeout: timeoutMs });
    // Let timers and animation frames queued by the page's scripts run.
    await page.evaluate(() => new Promise((res) => requestAnimationFrame(() => setTimeout(res, 50))));
    await page.waitForTimeout(100);
    const info = await page.evaluate(inspectPlots);
    if (info.plots.length === 0) reasons.push('no svg.plot in the page');
    let points = 0, circles = 0, lines = 0;
    for (const p of info.plots) {
      const name = `plot #${p.index}${p.title ? ` (${p.title})` : ''}`;
      const dp = p.dataPoints;
      if (dp === null) reasons.push(`${name}: no data-points attribute`);
      else if (!/^\s*\d+\s*$/.test(dp) || Number(dp) <= 0) reasons.push(`${name}: data-points="${dp}"`);
      else points += Number(dp);
      if (p.circles + p.lines === 0) reasons.push(`${name}: no circle.pt or path.line`);
      if (!(p.width > 0 && p.height > 0)) reasons.push(`${name}: rendered box ${p.width}x${p.height}`);
      for (const b of p.bad.slice(0, 5)) reasons.push(`${name}: ${b}`);
      if (p.bad.length > 5) reasons.push(`${name}: ${p.bad.length - 5} more non-finite marks`);
      circles += p.circles;
      lines += p.lines;
    }
    summary = `${info.plots.length} plots, ${points} points (${circles} circle.pt, ${lines} path.line)`;
  } catch (e) {
    reasons.push(`load/inspect failed: ${(e.message || String(e)).split('\n')[0]}`);
  } finally {
    await page.close().catch(() => {});
  }
  return { ok: reasons.length === 0, reasons, summary };
}

async function main() {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fleetsim-chromium-'));
  let context = null;
  // A watchdog: whatever hangs (launch, a page, closing), the script ends.
  const totalMs = timeoutMs * (files.length + 1) + 30000;
  const watchdog = setTimeout(() => {
    process.stdout.write(`FAIL: check_report.js timed out after ${Math.round(totalMs / 1000)} s\n`);
    try { fs.rmSync(userDataDir, { recursive: true, force: true }); } catch (e) { /* ignore */ }
    process.exit(1);
  }, totalMs);
  let failed = 0;
  try {
    try {
      context = await chromium.launchPersistentContext(userDataDir, {
        executablePath, args: launchArgs, headless: true, timeout: timeoutMs,
      });
    } catch (e) {
      process.stdout.write(`FAIL: cannot start ${executablePath}: ${(e.message || String(e)).split('\n')[0]}\n`);
      return 1;
    }
    // Nothing leaves the machine: whatever is not file: or data: is aborted
    // (the request listener above has already recorded it).
    await context.route((u) => u.protocol !== 'file:' && u.protocol !== 'data:', (r) => r.abort());
    for (const f of files) {
      const r = await checkFile(context, f);
      if (r.ok) {
        process.stdout.write(`OK ${f}: ${r.summary}\n`);
      } else {
        failed++;
        process.stdout.write(`FAIL ${f}: ${r.reasons.join('; ')}\n`);
      }
    }
  } finally {
    if (context) await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
    clearTimeout(watchdog);
  }
  return failed ? 1 : 0;
}

main().then((rc) => process.exit(rc), (e) => {
  process.stdout.write(`FAIL: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
