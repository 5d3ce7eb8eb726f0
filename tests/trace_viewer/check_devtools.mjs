// Loads the trace JSON of stackcap-demo --scenario NAME --json into Chrome
// DevTools' own trace model, in headless Chromium, and checks what the
// Performance panel would show: a track for every CPU and for every
// requester pthread, named and in order; the slices of the captures and of
// the handlers; an arrow (a flow) from each IPI's wait to its handler.
//
// usage: node check_devtools.mjs STACKCAP_DEMO SCENARIO...
// Exit 0: all held; 1: a check failed (each said on stderr); 77: skipped
// (no Chromium, or puppeteer-core not installed: npm ci in this folder).
//
// The model is the one the panel draws from: devtools_app.html's
// models/trace/trace.js, TraceModel.Model with all its handlers.
// Renderer.processes gives each thread's entries (its slices) in the
// panel's track order, Flows.flows the arrows.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { viewerArgs } from './viewer_args.mjs';

const { chromium, demo, scenarios, puppeteer } =
    await viewerArgs('check_devtools.mjs');

// What the JSON itself says: the tracks' names by tid, slices, flow ids.
function fromJson(trace) {
  const names = new Map(), slices = {}, flows = new Set();
  for (const e of trace.traceEvents) {
    if (e.ph === 'M' && e.name === 'thread_name') names.set(e.tid, e.args.name);
    if (e.ph === 'X') slices[e.name] = (slices[e.name] || 0) + 1;
    if (e.ph === 's') flows.add(e.id);
  }
  return { names, slices, nflows: flows.size };
}

// In the DevTools page: parse with the panel's model, and report.
async function devtoolsView(page, events) {
  return page.evaluate(async (events) => {
    const T = await import('./models/trace/trace.js');
    const model = T.TraceModel.Model.createWithAllHandlers();
    await model.parse(events, { metadata: {}, isFreshRecording: false });
    const data = model.parsedTrace(0).data;
    const threads = [];
    for (const [, proc] of data.Renderer.processes)
      for (const [tid, t] of proc.threads)
        threads.push({ tid, name: t.name,
          entries: t.entries.map((e) => e.name) });
    const flows = data.Flows.flows.map((f) => f.map((e) => ({
      name: e.name, tid: e.tid, ph: e.ph })));
    return { threads, flows };
  }, events);
}

const args = ['--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
const dir = mkdtempSync(join(tmpdir(), 'sc-devtools-'));
// Bounds far above a quiet machine's (Chromium starts in about a second):
// a loaded host (ctest -j, a fuzzer beside) is slow, not broken; ctest's
// TIMEOUT bounds the whole.
const BOUND_MS = 150 * 1000;
const browser = await puppeteer.launch({ executablePath: chromium,
  headless: true, args, userDataDir: join(dir, 'profile'),
  timeout: BOUND_MS, protocolTimeout: BOUND_MS });
let failed = 0;
const fail = (scn, what) => { console.error(`${scn}: ${what}`); failed++; };
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(BOUND_MS);
  await page.goto('devtools://devtools/bundled/devtools_app.html',
      { waitUntil: 'load', timeout: BOUND_MS });
  for (const scn of scenarios) {
    const file = join(dir, `${scn}.json`);
    execFileSync(demo, ['--scenario', scn, '--json', file],
        { stdio: ['ignore', 'ignore', 'inherit'] });
    const trace = JSON.parse(readFileSync(file, 'utf8'));
    const want = fromJson(trace);
    const got = await devtoolsView(page, trace.traceEvents);

    // Tracks: every one the JSON names, in its tid order (cpu0.., then
    // the pthreads), each with slices.
    const order = [...want.names.keys()].sort((a, b) => a - b)
        .map((t) => want.names.get(t));
    const shown = got.threads.map((t) => t.name);
    if (JSON.stringify(shown) !== JSON.stringify(order))
      fail(scn, `tracks ${JSON.stringify(shown)}, not ` +
          JSON.stringify(order));
    if (!order.some((n) => n.startsWith('pthread ')))
      fail(scn, 'no requester track');
    for (const t of got.threads)
      if (t.entries.length === 0) fail(scn, `track ${t.name}: no slice`);

    // Slices: every capture and handler slice of the JSON, in DevTools.
    const count = (name) => got.threads.reduce((n, t) =>
      n + t.entries.filter((e) => e === name).length, 0);
    for (const name of ['stack_save_td', 'IPI_TRACE wait',
      'stack_capture_intr']) {
      if (count(name) !== (want.slices[name] || 0))
        fail(scn, `${count(name)} "${name}" slices, the JSON has ` +
            `${want.slices[name] || 0}`);
    }
    if ((want.slices['stack_save_td'] || 0) === 0 &&
        (want.slices['sc_machine_snapshot'] || 0) === 0)
      fail(scn, 'no capture slice at all');

    // Arrows: one per IPI flow of the JSON, from a wait to a handler.
    if (got.flows.length !== want.nflows)
      fail(scn, `${got.flows.length} arrows, the JSON has ${want.nflows}`);
    for (const f of got.flows) {
      const from = f[0], to = f[f.length - 1];
      if (f.length !== 2 || from.name !== 'IPI_TRACE wait' ||
          to.name !== 'stack_capture_intr')
        fail(scn, `an arrow ${JSON.stringify(f)}`);
    }
    console.log(`${scn}: tracks ${shown.join(', ')}; ` +
        `${count('stack_save_td')} captures, ` +
        `${count('stack_capture_intr')} handlers, ${got.flows.length} arrows`);
  }
} finally {
  await browser.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed === 0 ? 0 : 1);
