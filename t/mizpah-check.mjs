// mizpah-check.mjs URL OUTDIR - drive the Mizpah page in Debian's
// Chromium (playwright-core) for t/mizpah.bats and bench/mizpah.sh, in
// a 1400x900 window.  Steps are served on a loopback port, written to
// OUTDIR/check.port once the browser is up: GET /STEP?a=..&b=.. answers
// one line of JSON, {"error": ...} when the step failed.
//   goto?a=QUERY        load the page again with this query string
//   eval?a=EXPR         the page's value of EXPR
//   click?a=ID          click agent ID's cell, where window.mizpah says
//   clickon?a=SELECTOR  click an element;  type?a=SELECTOR&b=TEXT
//   press?a=KEY         a key to the focused element (focus?a=SELECTOR)
//   card                the detail panel: {title, facts: {dt: dd}}
//   glyph?a=ID          agent ID's cell read back from the canvases: its
//                       colour (the most common one) and its shape (a
//                       mask, one character per pixel)
//   motion?a=reduce     emulate prefers-reduced-motion (no-preference)
//   shot?a=NAME         a screenshot, OUTDIR/NAME.png
//   perf?a=SECONDS      frames a second, long-task ms a second
import { chromium } from 'playwright-core';
import http from 'node:http';
import fs from 'node:fs';

const [base, outdir] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--disable-quic'],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
page.on('pageerror', (e) => console.log(JSON.stringify({ pageerror: e.message })));
await page.goto(base);

const cellOf = (id) => page.evaluate((id) =>
  window.mizpah.drawn().find((c) => c.id === id), id);

// The cell's pixels over the three canvases, topmost layer first.
function readGlyph(c) {
  const px = [...document.querySelectorAll('#sky canvas')].reverse().map((k) =>
    k.getContext('2d').getImageData(c.x, c.y, c.size, c.size).data);
  const seen = new Map();
  let mask = '';
  for (let i = 0; i < c.size * c.size; i++) {
    const d = px.find((d) => d[i * 4 + 3] > 128);
    mask += (i % c.size ? '' : '\n') + (d ? '#' : '.');
    if (!d) continue;
    const rgb = '#' + [0, 1, 2].map((k) => d[i * 4 + k].toString(16).padStart(2, '0')).join('');
    seen.set(rgb, (seen.get(rgb) || 0) + 1);
  }
  const colour = [...seen].sort((x, y) => y[1] - x[1])[0];
  return { id: c.id, look: c.look, colour: colour && colour[0], mask };
}

async function perf(seconds) {
  return page.evaluate(async (s) => {
    let busy = 0, frames = 0;
    const po = new PerformanceObserver((l) => {
      for (const e of l.getEntries()) busy += e.duration;
    });
    po.observe({ type: 'longtask', buffered: false });
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

const steps = {
  goto: async (a) => { await page.goto(base.replace(/\?.*/, '') + a); return {}; },
  eval: (a) => page.evaluate(a),
  click: async (a) => {
    const c = await cellOf(a), r = await page.locator('#base').boundingBox();
    await page.mouse.click(r.x + c.x + c.size / 2, r.y + c.y + c.size / 2);
    return { clicked: a };
  },
  clickon: async (a) => { await page.click(a); return {}; },
  type: async (a, b) => { await page.fill(a, b); return {}; },
  focus: async (a) => { await page.focus(a); return {}; },
  press: async (a) => { await page.keyboard.press(a); return {}; },
  card: () => page.evaluate(() => ({
    hidden: document.getElementById('card').hidden,
    title: document.getElementById('who').textContent,
    facts: Object.fromEntries([...document.querySelectorAll('#facts dt')].map((t) =>
      [t.textContent, t.nextElementSibling.textContent])) })),
  glyph: async (a) => page.evaluate(readGlyph, await cellOf(a)),
  motion: async (a) => { await page.emulateMedia({ reducedMotion: a }); return {}; },
  shot: async (a) => { await page.screenshot({ path: `${outdir}/${a}.png` });
    return { shot: `${outdir}/${a}.png` }; },
  perf: (a) => perf(Number(a)),
};

const server = http.createServer(async (req, res) => {
  const u = new URL(req.url, 'http://x'), name = u.pathname.slice(1);
  let out;
  try {
    if (!steps[name]) throw new Error(`no step ${name}`);
    out = await steps[name](u.searchParams.get('a'), u.searchParams.get('b'));
  } catch (e) {
    out = { error: `${name}: ${e.message.split('\n')[0]}` };
  }
  res.end(JSON.stringify(out ?? null) + '\n');
});
server.listen(0, '127.0.0.1', () =>
  fs.writeFileSync(`${outdir}/check.port`, String(server.address().port)));
process.on('SIGTERM', () => {	// the browser closed, or not, within 3 s
  setTimeout(() => process.exit(0), 3000);
  browser.close().finally(() => process.exit(0));
});
