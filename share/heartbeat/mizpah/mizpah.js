// mizpah.js - the fleet on a canvas, from the MQTT pulse stream and the retained status topics
// alone (heart-pulse(1)): no API, no database.  Query: broker (a ws:// URL), prefix, username; the
// password in the fragment, #password= (never sent; cleared at once: heart(7)).  Invariant: the
// canvases are painted only when what they show changes, never per frame; breathing and waking
// agents sit on two overlay canvases that CSS animates.  window.mizpah: a read-only view for tests.
'use strict';
const q = new URLSearchParams(location.search), prefix = q.get('prefix') || 'heart';
const pw = new URLSearchParams(location.hash.slice(1)).get('password') || undefined;
history.replaceState(null, '', location.pathname + location.search);
const url = q.get('broker') || `ws://${location.hostname || 'localhost'}:9001`;
const $ = (id) => document.getElementById(id), agents = new Map();	// id -> what we know of it
// Looks, worst first: legend, colour, glyph (SVG path, 100 box, even-odd); the first six are problems.
const O = 'M50 8a42 42 0 1 1 0 84a42 42 0 1 1 0-84z', I = 'M50 22a28 28 0 1 0 0 56a28 28 0 1 0 0-56z';
const LOOKS = {
  offline: ['offline', '#a7afc2', O + I],
  open: ['breaker open', '#ff6b3d', 'M22 8L50 36L78 8L92 22L64 50L92 78L78 92L50 64L22 92L8 78L36 50L8 22z'],
  half_open: ['half-open', '#ffb000', `${O}${I}M50 22v56a28 28 0 0 1 0-56z`],
  failing: ['failing', '#ff7ac6', 'M50 8L94 88H6z'],
  overdue: ['overdue: nobody wakes it', '#e69f00', `${O}M44 22v34l24 14l5-9l-19-11v-28z`],
  stopped: ['stopped', '#cc79a7', 'M20 14h24v72h-24zM56 14h24v72h-24z'],
  unknown: ['unknown: no broker', '#6b7488', 'M50 34a16 16 0 1 0 0 32a16 16 0 1 0 0-32z'],
  late: ['missed pulses', '#3ddc97', `${O}${I}M50 38a12 12 0 1 0 0 24a12 12 0 1 0 0-24z`],
  waking: ['waking', '#f0e442', 'M50 4L96 50L50 96L4 50z'],
  capped: ['capped today', '#56b4e9', 'M14 14h72v72h-72z'],
  sleeping: ['quiet hours', '#b39dff', 'M62 8A42 42 0 1 0 92 64A34 34 0 0 1 62 8z'],
  online: ['breathing', '#3ddc97', O],
};
const NAMES = Object.keys(LOOKS), PROBLEMS = new Set(NAMES.slice(0, 6)), rank = (l) => Math.min(NAMES.indexOf(l), 6);
const ctx = { base: $('base').getContext('2d'), online: $('breath').getContext('2d'), waking: $('flash').getContext('2d') };
const HEAD = 20, MAX = 96, GAP = 16;	// a group's title; the largest cell
let cells = [], groups = [], sprites = {}, size = 0, cur = null, shown = null;
let up = false, only = null, find = '', paints = 0, frame = 0, full = true, lastFull = 0, cost = 0, changed = new Set();
const plural = (n, w) => `${n.toLocaleString('en')} ${w}${n === 1 ? '' : 's'}`;
// An agent's group: its id up to the last '-', '_' or '.', else without its
// trailing digits (heart(7)); groups of one are shown together, ungrouped.
const groupOf = (id) => (/^(.+)[-_.]/.exec(id) || /^(.+?)\d*$/.exec(id))[1];

function lookOf(a, now) {
  const p = a.p || {}, late = now - a.seen, iv = a.interval * 1000;
  if (!up) return 'unknown';	// the page lost the broker, not the agents
  if (a.will && now >= a.will) [a.status, a.will] = ['offline', 0];	// its node's will, held 1 s
  if (a.status === 'offline' || late > (a.misses + 0.5) * iv) return 'offline';
  if (p.breaker === 'open' || p.breaker === 'half_open') return p.breaker;
  if (/^(error|tool_cap)$/.test(p.last_wake && p.last_wake.status)) return 'failing';
  if (p.overdue || /^(paused|held|dormant|capped|throttled)$/.test(p.skip?.status)) return p.overdue ? 'overdue' : 'stopped';
  if (late > 1.5 * iv) return 'late';
  return p.waking ? 'waking' : p.cap && p.cap.used >= p.cap.cap ? 'capped' : p.quiet ? 'sleeping' : 'online';
}

function sprite(look, s) {	// a look's glyph, s pixels square
  const k = Object.assign(document.createElement('canvas'), { width: s, height: s }), c = k.getContext('2d');
  Object.assign(c, { fillStyle: LOOKS[look][1] }).scale(s / 100, s / 100);
  c.fill(new Path2D(LOOKS[look][2]), 'evenodd');
  return k;
}

function touch(a, now) {	// a new look: drawn in place if the order stays
  const l = lookOf(a, now);
  if (l === a.look) return;
  if (rank(l) !== rank(a.look) || only) full = true; else changed.add(a);
  a.look = l;
  schedule();
}

const schedule = () => { frame ||= requestAnimationFrame(render); };
// A layout at most each 200 ms, and at most a fifth of the time however
// many agents are born at once.
function render() {
  const wait = lastFull + Math.max(200, 5 * cost) - performance.now();
  frame = 0;
  if (full && wait > 0) return void (frame = setTimeout(() => { frame = 0; schedule(); }, wait));
  if (full) layout();
  else for (const a of changed) if (a.cell >= 0) cell(cells[a.cell], true);
  changed.clear();
  counts();
  card();
}

// Groups are blocks of cells under a title, set left to right and wrapped
// like words; the cell is the largest at which every block fits.
function pack(W, s, place) {
  const cols = Math.max(1, Math.floor(W / s));
  let x = 0, y = 0, h = 0;
  for (const g of groups) {
    const n = g.list.length, w = Math.max(Math.min(n, cols) * s, g.tw);
    const gc = Math.min(cols, Math.floor(w / s)), gh = HEAD + Math.ceil(n / gc) * s;
    if (x && x + w > W) [x, y, h] = [0, y + h + GAP / 2, 0];
    if (place) Object.assign(g, { x, y, w, h: gh, cols: gc });
    for (let i = 0; place && i < n; i++) {
      g.list[i].cell = cells.length;
      cells.push({ a: g.list[i], g, x: x + i % gc * s, y: y + HEAD + Math.floor(i / gc) * s });
    }
    [x, h] = [x + w + GAP, Math.max(h, gh)];
  }
  return y + h;
}

function layout() {
  const W = $('sky').clientWidth, H = $('sky').clientHeight, n = new Map(), by = new Map();
  [full, lastFull, cells, ctx.base.font] = [false, performance.now(), [], '12px system-ui'];
  for (const a of agents.values()) n.set(a.group, (n.get(a.group) || 0) + 1);
  for (const a of agents.values()) {
    const g = n.get(a.group) > 1 ? a.group : '';
    a.cell = -1;
    if ((!only || only.has(a.look)) && a.id.toLowerCase().includes(find))
      (by.get(g) || by.set(g, []).get(g)).push(a);
  }
  groups = [...by].sort(([x], [y]) => (x === '') - (y === '') || (x < y ? -1 : 1))
    .map(([name, list]) => {
      const bad = list.filter((a) => PROBLEMS.has(a.look)).length;
      const title = `${name || (by.size > 1 ? 'ungrouped' : 'all')}: ${plural(list.length, 'agent')}` +
        (bad ? `, ${plural(bad, 'problem')}` : '');
      list.sort((x, y) => rank(x.look) - rank(y.look) || (x.id < y.id ? -1 : 1));
      return { name, list, title, tw: ctx.base.measureText(title).width + 8 };
    });
  for (size = MAX; size > 4 && pack(W, size) > H; size--);
  paint(W, Math.max(H, pack(W, size, true)));
  cost = performance.now() - lastFull;
}

// Glyphs are copied as pixels (an ImageData a layer), text drawn after:
// ten thousand drawImage calls cost a software canvas half a second.
function paint(W, H) {
  const dpr = devicePixelRatio || 1, d = Math.round((size >= 56 ? size - 14 : size) * dpr);
  const w = Math.round(W * dpr), h = Math.round(H * dpr), bufs = { w };
  if (sprites.d !== d) sprites = Object.fromEntries([...NAMES.map((l) => [l, sprite(l, d)
    .getContext('2d').getImageData(0, 0, d, d)]), ['d', d]]);
  for (const l of NAMES) sprites[l].px ||= new Uint32Array(sprites[l].data.buffer);
  for (const [k, c] of Object.entries(ctx)) {
    if (c.canvas.width !== w || c.canvas.height !== h)
      Object.assign(c.canvas, { width: w, height: h }).style.cssText = `width: ${W}px; height: ${H}px`;
    if (c.img?.width !== w || c.img.height !== h) c.img = new ImageData(w, h);
    (bufs[k] = new Uint32Array(c.img.data.buffer)).fill(0);
  }
  for (const e of cells) cell(e, bufs);
  for (const c of Object.values(ctx)) c.putImageData(c.img, 0, 0) ?? c.setTransform(dpr, 0, 0, dpr, 0, 0);
  Object.assign(ctx.base, { font: '12px system-ui', fillStyle: '#a3adc4' });
  for (const g of groups) ctx.base.fillText(g.title, g.x + 2, g.y + 14);
  for (const e of cells) if (size >= 56 || e.a === cur) cell(e);
  paints++;
}

// A cell's glyph into the layers' pixels (bufs), or its name and cursor
// (none), or all of it again in place (true).
function cell({ a, g, x, y }, bufs) {
  const s = size, big = s >= 56, c = ctx.base, dpr = devicePixelRatio || 1, sp = sprites[a.look];
  const k = ctx[a.look] ? a.look : 'base', x0 = Math.round((x + (big ? 7 : 0)) * dpr), y0 = Math.round(y * dpr);
  if (bufs?.w) {
    const d = sp.width, b = bufs[k];
    for (let r = 0, i = 0, o = y0 * bufs.w + x0; r < d; r++, o += bufs.w - d)
      for (let j = 0; j < d; j++) b[o++] = sp.px[i++];
    return;
  }
  if (bufs === true) {
    for (const k of Object.values(ctx)) k.clearRect(x, y, s, s);
    ctx[k].putImageData(sp, x0, y0);
    paints++;
  }
  if (big) {
    const name = a.id.slice(g.name.length).replace(/^[-_.]/, '') || a.id;
    let t = name, n = name.length;
    Object.assign(c, { font: '11px system-ui', fillStyle: '#e6ebf5', textAlign: 'center' });
    while (n > 1 && c.measureText(t).width > s - 4) t = `${name.slice(0, --n)}…`;
    c.fillText(t, x + s / 2, y + s - 3);
    c.textAlign = 'left';
  }
  if (a === cur) Object.assign(c, { strokeStyle: '#ffffff', lineWidth: 1 }).strokeRect(x + .5, y + .5, s - 1, s - 1);
}

function counts() {
  const n = Object.fromEntries(NAMES.map((l) => [l, 0]));
  for (const a of agents.values()) n[a.look]++;
  for (const b of $('legend').children) b.lastChild.textContent = n[b.dataset.look].toLocaleString('en');
  const bad = [...PROBLEMS].filter((l) => n[l]), total = bad.reduce((t, l) => t + n[l], 0);
  $('counts').textContent = plural(agents.size, 'agent') +
    (cells.length < agents.size ? `, ${cells.length.toLocaleString('en')} shown` : '');
  $('problems').textContent = plural(total, 'problem') +
    (total ? `: ${bad.map((l) => `${n[l].toLocaleString('en')} ${LOOKS[l][0]}`).join(', ')}` : '');
  $('problems').className = total ? 'bad' : '';
}

function when(t) {	// a Unix time: how far from now, and when
  const d = Math.round(t - Date.now() / 1000), m = Math.abs(d);
  const v = m < 90 ? `${m} s` : m < 5400 ? `${Math.round(m / 60)} min` :
    m < 172800 ? `${Math.round(m / 3600)} h` : `${Math.round(m / 86400)} d`;
  return `${d > 0 ? `in ${v}` : `${v} ago`} (${new Date(t * 1000).toISOString().replace('.000', '')})`;
}
function facts(a) {	// the panel: every figure from the pulse and status
  const p = a.p || {}, c = p.cap, w = p.last_wake, b = p.breaker;
  return [['state', LOOKS[a.look][0] + (p.skip ? ` (last skip ${p.skip.status}: ${p.skip.reason || '-'})` : '')],
    ['last pulse', a.pseen ? `${when(Math.round(a.pseen / 1000))}, seq ${p.seq}` : 'none yet'],
    ['host', p.host || a.host || 'unknown'],
    ['birth', a.node ? `${a.node}, bdseq ${a.bdseq}` : 'unknown'],
    ['breaker', b ? b.replace('_', '-') + (p.breaker_trigger ? ` (${p.breaker_trigger})` : '') : 'unknown'],
    ['why', p.breaker_reason || '-'],
    ['next probe', p.breaker_until ? when(p.breaker_until) : '-'],
    ['cap', c ? `${c.used} used of ${c.cap}, ${Math.max(0, c.cap - c.used)} left` : 'unknown'],
    ['resets', c ? when(c.resets) : 'unknown'],
    ['tokens today', c ? c.tokens.toLocaleString('en') : 'unknown'],
    ['cost today', typeof (c && c.cost) === 'number' ? `$${c.cost.toFixed(c.cost < 1 ? 4 : 2)}` : 'no price'],
    ['last wake', w ? `${w.chamber} wake, ${w.status}, ${when(w.ts)}` : 'none'],
    ['its error', (w && w.error) || '-'],
    ['last answer', p.answer ? when(p.answer) : 'none seen'],
    ['schedule', p.due ? `due ${when(p.due)}${p.overdue ? ': overdue, no heart-wake looked since' : ''}` : 'off'],
    ['quiet hours', p.quiet ? 'now: no chamber may wake' : 'no']];
}
function card() {
  $('card').hidden = !shown;
  if (shown) $('who').textContent = shown.id;
  if (shown) $('facts').replaceChildren(...facts(shown).flatMap((kv) => kv.map((v, i) =>
    Object.assign(document.createElement(i ? 'dd' : 'dt'), { textContent: v }))));
}

function focus(a, show) {	// the cursor to agent a; its panel if show
  for (const x of [cur, a]) if (x && x.cell >= 0) changed.add(x);
  [cur, shown] = [a, show || shown ? a : shown];
  schedule();
}
function filter(set) {
  [only, full] = [set, true];
  for (const b of $('legend').children) b.ariaPressed = String(!!set && set.size === 1 && set.has(b.dataset.look));
  $('problems').ariaPressed = String(set === PROBLEMS);
  schedule();
}

function hit(ev) {	// the agent under the mouse, or null
  const r = $('base').getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
  const g = groups.find((g) => x >= g.x && x < g.x + g.w && y >= g.y + HEAD && y < g.y + g.h);
  const col = g && Math.floor((x - g.x) / size);
  return g && col < g.cols ? g.list[Math.floor((y - g.y - HEAD) / size) * g.cols + col] || null : null;
}

// A node's will takes offline the agents born of it, unless reborn since, 1 s later (a broker going down
// sends every will); a status from another node than an agent's birth may only rebirth it (heart-pulse(1)).
function message(topic, buf) {
  const t = topic.slice(prefix.length + 1).split('/'), now = Date.now();
  let m, a;
  try { m = JSON.parse(buf.toString()); } catch {	// a status cleared: the agent retired
    return void (!buf.length && t.join() === `${t[0]},status` && agents.delete(t[0]) && (full = true) && schedule()); }
  if (t.length === 3 && t[0] === 'node' && t[2] === 'status' && m.status === 'offline')
    for (a of agents.values()) if (a.node === t[1] && a.bdseq <= m.bdseq)
      touch(Object.assign(a, m.reason === 'will' ? { will: a.will || now + 1000 } : { status: 'offline' }), now);
  if (t.length !== 2 || !/^(status|pulse)$/.test(t[1])) return;
  if (!(a = agents.get(t[0]))) {
    agents.set(t[0], a = { id: t[0], group: groupOf(t[0]), seen: now, pseen: 0, status: 'online',
      interval: 10, misses: 3, bdseq: -1, cell: -1 });
    full = true;
  }
  if (t[1] === 'pulse') Object.assign(a, { p: m, seen: now, pseen: now, status: 'online', will: 0 });
  else if (a.node === undefined || a.node === m.node ? m.bdseq >= a.bdseq : m.status === 'online')	// its owner's, not old
    Object.assign(a, { status: m.status, node: m.node, bdseq: m.bdseq, host: m.host,
      interval: m.interval || a.interval, misses: m.misses || a.misses }, m.status === 'online' && { seen: now, will: 0 });
  touch(a, now);
  if (a === shown) schedule();
}

for (const l of NAMES) {	// the legend, and the filter by look
  const b = Object.assign(document.createElement('button'), { onclick: () =>
    filter(only && only.size === 1 && only.has(l) ? null : new Set([l])), ariaPressed: 'false' });
  b.dataset.look = l;
  $('legend').appendChild(b).append(Object.assign(sprite(l, 32), { style: 'width: 16px' }), LOOKS[l][0],
    document.createElement('span'));
}
$('problems').onclick = () => filter(only === PROBLEMS ? null : PROBLEMS);
$('search').oninput = (e) => { find = e.target.value.trim().toLowerCase(); full = true; schedule(); };
$('close').onclick = () => { shown = null; schedule(); };
$('base').onclick = (e) => { const a = hit(e); if (a) focus(a, true); };
$('base').onmousemove = (e) => { const a = hit(e); $('base').title = a ? `${a.id}: ${LOOKS[a.look][0]}` : ''; };
$('base').onkeydown = (e) => {	// arrows move the cursor, Enter shows it
  const i = cur && cur.cell >= 0 ? cur.cell : -1, g = i < 0 ? null : cells[i].g;
  const d = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -(g && g.cols), ArrowDown: g && g.cols }[e.key];
  if (d !== undefined && cells.length) focus(cells[Math.max(0, Math.min(cells.length - 1, i + (i < 0 ? 1 : d)))].a);
  else if ((e.key === 'Enter' || e.key === ' ') && cur) focus(cur, true);
  else return;
  e.preventDefault();
};
document.onkeydown = (e) => {
  if (e.key === 'Escape') { shown = null; schedule(); }
  if (e.key === '/' && e.target.tagName !== 'INPUT') { e.preventDefault(); $('search').focus(); }
};
new ResizeObserver(() => { full = true; schedule(); }).observe($('sky'));
const tick = () => { for (const a of agents.values()) touch(a, Date.now()); if (shown) card(); };
setInterval(tick, 1000);	// time passes: missed pulses, and the panel's ages
const client = mqtt.connect(url, { username: q.get('username') || undefined, password: pw, reconnectPeriod: 2000 });
let why = '', link = (s, bad) => Object.assign($('link'), { textContent: url + s, className: bad ? 'bad' : '' });
// Away from the broker every agent is unknown (wills held then were its going); back, misses count anew.
const hold = (u) => { up = u; for (const a of agents.values()) u ? a.seen = Date.now() : a.will > Date.now() && (a.will = 0); tick(); };
client.on('connect', () => { why = ''; link(': subscribing');
  client.subscribe(`${prefix}/#`, (e) => { link(e ? `: ${e.message}` : ` ${prefix}/#`, e); hold(!e); }); });
client.on('error', (e) => { why = `: ${e.message}`; link(why, true); });
client.on('close', () => { link(`: disconnected${why}`, true); hold(false); });
client.on('message', message);
window.mizpah = Object.freeze({ get paints() { return paints; },
  drawn: () => cells.map(({ a, g, x, y }) => ({ id: a.id, look: a.look, group: g.name, x, y, size })) });
