// mizpah-check.mjs URL OUTDIR - drive the Mizpah page in Debian's
// Chromium (playwright-core) and print what it shows, one JSON line
// per step, for t/mizpah.bats to judge.  Steps are read from stdin:
//   wait ID STATE       until circle ID has data-state STATE (15 s)
//   states              print every circle's state
//   counts              print the header line
//   opacity ID          print circle ID's computed opacity
//   shot NAME           save a screenshot OUTDIR/NAME.png
//   perf SECONDS        main-thread busy time per second and frame rate
import { chromium } from 'playwright-core';
import readline from 'node:readline';

const [url, outdir] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--disable-quic'],
});
const page = await browser.newPage({ viewport: { width: 900, height: 600 } });
page.on('pageerror', (e) => console.log(JSON.stringify({ pageerror: e.message })));
await page.goto(url);
const say = (o) => console.log(JSON.stringify(o));
const sel = (id) => `[data-agent="${id}"]`;

async function perf(seconds) {
  return page.evaluate(async (s) => {
    let busy = 0, frames = 0;
    const po = new PerformanceObserver((l) => {
      for (const e of l.getEntries()) busy += e.duration;
    });
    try { po.observe({ type: 'longtask', buffered: false }); } catch {}
    const t0 = performance.now();
    await new Promise((done) => {
      const tick = () => { frames++;
        performance.now() - t0 < s * 1000 ? requestAnimationFrame(tick) : done(); };
      requestAnimationFrame(tick);
    });
    po.disconnect();
    return { longtask_ms_per_s: busy / s, fps: frames / s };
  }, seconds);
}

for await (const line of readline.createInterface({ input: process.stdin })) {
  const [cmd, a, b] = line.trim().split(/\s+/);
  try {
    if (cmd === 'wait') {
      await page.waitForSelector(`${sel(a)}[data-state="${b}"]`, { timeout: 15000 });
      say({ wait: a, state: b, ok: true });
    } else if (cmd === 'states') {
      say(await page.$$eval('[data-agent]', (els) =>
        Object.fromEntries(els.map((e) => [e.dataset.agent, e.dataset.state]))));
    } else if (cmd === 'counts') {
      say({ counts: await page.textContent('#counts') });
    } else if (cmd === 'opacity') {
      say({ agent: a, opacity: Number(await page.$eval(sel(a),
        (e) => getComputedStyle(e).opacity)) });
    } else if (cmd === 'shot') {
      await page.screenshot({ path: `${outdir}/${a}.png` });
      say({ shot: `${outdir}/${a}.png` });
    } else if (cmd === 'perf') {
      say(await perf(Number(a)));
    }
  } catch (e) {
    say({ error: `${line}: ${e.message.split('\n')[0]}` });
  }
}
await browser.close();
