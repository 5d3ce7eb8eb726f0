// Loads the trace JSON of stackcap-demo --scenario NAME --json into
// speedscope (its release build from npm), in headless Chromium, and
// checks what it shows: one profile for each track of the JSON, named as
// the track and in the JSON's order, and every profile as long as the
// whole trace, so that they share one time axis (issue 22: two profiles
// on axes that each began at their own first event could not be lined
// up).
//
// usage: node check_speedscope.mjs STACKCAP_DEMO SCENARIO...
// Exit 0: all held; 1: a check failed (each said on stderr); 77: skipped
// (no Chromium, or the npm packages not installed: npm ci in this folder).
//
// How speedscope is read: it loads a file given by a script in the page
// (#localProfilePath, as its own command-line tool does) and lists its
// profiles in a table of the page (the profile chooser: number, name such
// as "stackcap machine (pid 1), cpu0 (tid 1)", total weight), which a test
// reads from the DOM cells.  An evented profile's total weight is from its
// first event to its last, so a profile that started at its own first
// event would show shorter than the trace.  (An earlier form summed the
// Sandwich view's self times from the page's text, profile by profile; it
// read a table still being drawn now and then under load.)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync }
  from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { SKIP, viewerArgs } from './viewer_args.mjs';

const { chromium, demo, scenarios, puppeteer } =
    await viewerArgs('check_speedscope.mjs');
let release;
try {
  const require = createRequire(import.meta.url);
  release = join(dirname(require.resolve('speedscope/package.json')),
      'dist', 'release', 'index.html');
  if (!existsSync(release))
    throw new Error(`no ${release}`);
} catch (e) {
  console.error('skipped: speedscope is not installed ' +
      `(${e.message}; npm ci in tests/trace_viewer; tools/test.sh does it)`);
  process.exit(SKIP);
}

// "10.86ms", "87.81µs", "391.00ns", "1.20s": microseconds.
function us(text) {
  const m = /^([0-9.]+)(ns|µs|ms|s)$/.exec(text.trim());
  if (!m)
    return NaN;
  const unit = { ns: 1e-3, 'µs': 1, ms: 1e3, s: 1e6 }[m[2]];
  return parseFloat(m[1]) * unit;
}

// The JSON's own view: its tracks' names in tid order, its length (us).
function fromJson(trace) {
  const names = new Map();
  let lo = Infinity, hi = -Infinity;
  for (const e of trace.traceEvents) {
    if (e.ph === 'M' && e.name === 'thread_name')
      names.set(e.tid, e.args.name);
    if (e.ph === 'X') {
      lo = Math.min(lo, e.ts);
      hi = Math.max(hi, e.ts + e.dur);
    }
  }
  const tracks = [...names.keys()].sort((a, b) => a - b)
    .map((t) => names.get(t));
  return { tracks, length: hi - lo };
}

// The profile chooser's rows: [name, weight] each.  The toolbar says how
// many profiles there are ("... (1/4)"); the chooser has that many rows
// once drawn.
async function profiles(page) {
  const handle = await page.waitForFunction(() => {
    const m = /\(\d+\/(\d+)\)\n/.exec(document.body.innerText);
    const rows = [...document.querySelectorAll('tr')]
      .map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))
      .filter((c) => c.length === 3 && /^\d+$/.test(c[0]));
    return m && rows.length === Number(m[1]) &&
      rows.map((c) => [c[1], c[2]]);
  }, { timeout: 60000 });
  return handle.jsonValue();
}

const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ['--no-sandbox', '--allow-file-access-from-files',
    '--enable-unsafe-swiftshader'],
});
const work = mkdtempSync(join(tmpdir(), 'stackcap-speedscope-'));
let failed = 0;
function check(ok, what) {
  if (!ok) {
    console.error(`FAILED: ${what}`);
    failed++;
  }
  return ok;
}
try {
  for (const name of scenarios) {
    const file = join(work, `${name}.json`), loader = join(work,
        `${name}.js`);
    execFileSync(demo, ['--scenario', name, '--json', file],
        { stdio: ['ignore', 'ignore', 'inherit'] });
    const text = readFileSync(file);
    const want = fromJson(JSON.parse(text));
    writeFileSync(loader, 'speedscope.loadFileFromBase64(' +
        JSON.stringify(`${name}.json`) + ', ' +
        JSON.stringify(text.toString('base64')) + ');\n');
    const page = await browser.newPage();
    await page.setViewport({ width: 1600, height: 2400 });
    await page.goto(`file://${release}#localProfilePath=${loader}`);
    const n = want.tracks.length;
    const got = await profiles(page);
    await page.close();
    if (!check(got.length === n, `${name}: speedscope shows ${got.length} ` +
        `profiles, not ${n} (one a track)`))
      continue;
    const lengths = [];
    got.forEach(([title, weight], i) => {
      check(title.endsWith(`, ${want.tracks[i]} (tid ${i + 1})`),
          `${name}: profile ${i + 1} is "${title}", not the track ` +
          `"${want.tracks[i]}"`);
      const length = us(weight);
      lengths.push(length);
      // The weight is rounded to 4 digits: 1% is far above that, and far
      // below a profile that starts at its own first event.
      check(Math.abs(length - want.length) <= 0.01 * want.length,
          `${name}: profile ${i + 1} (${want.tracks[i]}) is ${weight} ` +
          `long, the trace ${want.length.toFixed(1)} us`);
    });
    console.log(`${name}: ${n} profiles (${want.tracks.join(', ')}), ` +
        `each ${lengths.map((l) => l.toFixed(0)).join('/')} us of the ` +
        `trace's ${want.length.toFixed(0)}`);
  }
} finally {
  await browser.close();
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
