// mizpah.js - the fleet, from the MQTT pulse stream alone: no API
// calls, no database.  Query string: broker (ws:// URL), prefix,
// username, password.  Each circle's data-state is one of online,
// waking, broken, offline; the stylesheet draws them.
'use strict';
const q = new URLSearchParams(location.search);
const prefix = q.get('prefix') || 'heart';
const url = q.get('broker') || `ws://${location.hostname || 'localhost'}:9001`;
const agents = new Map();	// id -> what we know of it
const nodes = new Map();	// publisher node -> its last status
const $ = (id) => document.getElementById(id);
let shown = null;		// the agent whose card is open

function agent(id) {
  let a = agents.get(id);
  if (a) return a;
  const slot = document.createElement('div');
  const el = document.createElement('div');
  slot.className = 'slot';
  el.className = 'agent';
  el.textContent = id;
  el.dataset.agent = id;
  el.onmouseenter = el.onclick = () => { shown = id; card(); };
  el.onmouseleave = () => { shown = null; card(); };
  slot.append(el);
  $('sky').append(slot);
  a = { id, el, pulse: null, seen: 0, status: 'online', interval: 10,
    misses: 3, node: null, bdseq: -1 };
  agents.set(id, a);
  return a;
}

function stateOf(a, now) {
  if (a.status === 'offline' || now - a.seen > a.misses * a.interval * 1000)
    return 'offline';
  if (a.pulse && a.pulse.breaker === 'open') return 'broken';
  if (a.pulse && a.pulse.waking) return 'waking';
  return 'online';
}

function ago(t) {
  return t ? `${Math.round((Date.now() - t) / 1000)} s ago` : 'never';
}

function card() {
  const a = agents.get(shown), c = $('card');
  c.hidden = !a;
  if (!a) return;
  const p = a.pulse || {};
  c.textContent = `${a.id}: ${a.el.dataset.state}\n` +
    `cap: ${p.cap ? `${p.cap.used}/${p.cap.cap}` : '?'}\n` +
    `breaker: ${p.breaker || '?'}\n` +
    `waking: ${p.waking || 'no'}\n` +
    `last seen: ${ago(a.seen)}\n` +
    `host: ${p.host || '?'}  seq: ${p.seq ?? '?'}`;
}

function draw() {
  const now = Date.now(), n = { online: 0, waking: 0, broken: 0, offline: 0 };
  for (const a of agents.values()) {
    const s = stateOf(a, now);
    if (a.el.dataset.state !== s) a.el.dataset.state = s;
    n[s]++;
  }
  $('counts').textContent = `${agents.size} agents: ${n.online} online, ` +
    `${n.waking} waking, ${n.broken} broken, ${n.offline} offline`;
  card();
}

// A publisher's status; its last will marks every agent it carried offline,
// unless that agent has since been reborn under a newer birth sequence.
function nodeStatus(node, m) {
  nodes.set(node, m);
  if (m.status !== 'offline') return;
  for (const a of agents.values())
    if (a.node === node && a.bdseq <= m.bdseq) a.status = 'offline';
}

function agentStatus(a, m) {
  if (m.bdseq < a.bdseq && a.node === m.node) return;	// a late, old message
  Object.assign(a, { status: m.status, node: m.node, bdseq: m.bdseq,
    interval: m.interval || a.interval, misses: m.misses || a.misses });
  if (m.status === 'online') a.seen = Date.now();
}

function message(topic, buf) {
  const t = topic.split('/');
  let m;
  try { m = JSON.parse(buf.toString()); } catch { return; }
  if (t.length === 4 && t[1] === 'node' && t[3] === 'status')
    return nodeStatus(t[2], m);
  if (t.length !== 3) return;
  const a = agent(t[1]);
  if (t[2] === 'status') agentStatus(a, m);
  if (t[2] !== 'pulse') return;
  a.pulse = m;
  a.seen = Date.now();
  a.status = 'online';
}

const client = mqtt.connect(url, { username: q.get('username') || undefined,
  password: q.get('password') || undefined, reconnectPeriod: 2000 });
client.on('connect', () => {
  $('link').textContent = `${url} ${prefix}/#`;
  client.subscribe(`${prefix}/#`);
});
client.on('close', () => { $('link').textContent = `${url}: disconnected`; });
let queued = false;	// draw at most once a frame, however many messages
client.on('message', (topic, buf) => {
  message(topic, buf);
  if (!queued)
    queued = requestAnimationFrame(() => { queued = false; draw(); });
});
setInterval(draw, 500);
