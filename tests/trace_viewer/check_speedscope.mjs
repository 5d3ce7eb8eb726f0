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
// (#localProfilePath, as its own command-line tool does), its toolbar
// names the profile shown ("stackcap machine (pid 1), cpu0 (tid 1)
// (1/4)"), the key "n" shows the next one, and its Sandwich view ("3")
// lists every frame with its self time, which add up to the profile's
// length.  The view is a table in the page, not a canvas, so a test can
// read it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync }
  from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const SKIP = 77;
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
const [demo, ...scenarios] = process.argv.slice(2);
if (!demo || scenarios.length === 0) {
  console.error('usage: node check_speedscope.mjs STACKCAP_DEMO SCENARIO...');
  process.exit(2);
}
if (!existsSync(chromium)) {
  console.error(`skipped: no Chromium at ${chromium} (apt-get install ` +
      'chromium, or set CHROMIUM)');
  process.exit(SKIP);
}
let puppeteer, release;
try {
  puppeteer = (await import('puppeteer-core')).default;
  const require = createRequire(import.meta.url);
  release = join(dirname(require.resolve('speedscope/package.json')),
      'dist', 'release', 'index.html');
  if (!existsSync(release))
    throw new Error(`no ${release}`);
} catch (e) {
  console.error('skipped: puppeteer-core or speedscope is not installed ' +
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

// The toolbar's profile and the Sandwich table's self times, added.
async function shown(page) {
  return page.evaluate(() => {
    const lines = document.body.innerText.split('\n');
    const title = lines.find((l) => /\(\d+\/\d+\)$/.test(l)) || '';
    // After the header "Total Self Symbol Name": rows of three lines,
    // the total, a tab and the self time, a tab and the name.
    const start = lines.findIndex((l) => /^Total\s+Self/.test(l));
    const selfs = [];
    for (let i = start + 1; start >= 0 && i + 2 < lines.length + 1; i += 3) {
      const self = (lines[i + 1] || '').trim().split(' ')[0];
      if (!self)
        break;
      selfs.push(self);
    }
    return { title, selfs, rows: document.querySelectorAll('tr').length };
  });
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
    await page.waitForFunction(
        () => /\(\d+\/\d+\)\n/.test(document.body.innerText),
        { timeout: 60000 });
    await page.keyboard.press('3');		// Sandwich
    const got = [];
    for (let i = 0; i < want.tracks.length; i++) {
      await page.waitForFunction((k) => document.body.innerText
          .includes(`(${k}/`) && /Total\s+Self/.test(document.body.innerText),
          { timeout: 30000 }, i + 1);
      got.push(await shown(page));
      await page.keyboard.press('n');	// the next profile
    }
    await page.close();
    const n = want.tracks.length;
    check(got.length > 0 && got[0].title.endsWith(`(1/${n})`),
        `${name}: speedscope shows ${got[0] && got[0].title}, ` +
        `not ${n} profiles`);
    const lengths = [];
    got.forEach((g, i) => {
      check(g.title.includes(`, ${want.tracks[i]} (tid ${i + 1}) ` +
          `(${i + 1}/${n})`), `${name}: profile ${i + 1} is "${g.title}", ` +
          `not the track "${want.tracks[i]}"`);
      const sum = g.selfs.map(us).reduce((a, b) => a + b, 0);
      lengths.push(sum);
      // Each self time is rounded to 3 or 4 digits: 1% is far above
      // that, and far below a profile that starts at its first event.
      check(Math.abs(sum - want.length) <= 0.01 * want.length,
          `${name}: profile ${i + 1} (${want.tracks[i]}) is ` +
          `${sum.toFixed(1)} us long, the trace ${want.length.toFixed(1)} ` +
          `us (self times ${g.selfs.join(' ')})`);
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
