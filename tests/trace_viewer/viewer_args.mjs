// What check_devtools.mjs and check_speedscope.mjs share: their command
// line (STACKCAP_DEMO SCENARIO...), and Chromium and puppeteer-core found
// or the check skipped (exit 77, said why: ctest's SKIP_RETURN_CODE).
import { existsSync } from 'node:fs';

export const SKIP = 77;

export async function viewerArgs(script) {
  const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
  const [demo, ...scenarios] = process.argv.slice(2);
  if (!demo || scenarios.length === 0) {
    console.error(`usage: node ${script} STACKCAP_DEMO SCENARIO...`);
    process.exit(2);
  }
  if (!existsSync(chromium)) {
    console.error(`skipped: no Chromium at ${chromium} (apt-get install ` +
        'chromium, or set CHROMIUM)');
    process.exit(SKIP);
  }
  try {
    const puppeteer = (await import('puppeteer-core')).default;
    return { chromium, demo, scenarios, puppeteer };
  } catch (e) {
    console.error('skipped: puppeteer-core is not installed (npm ci in ' +
        'tests/trace_viewer; tools/test.sh does it)');
    process.exit(SKIP);
  }
}
