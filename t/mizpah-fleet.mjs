// mizpah-fleet.mjs BROKER PREFIX N - a simulated fleet for t/mizpah.bats:
// N agents in ten groups (eu-scout-00000 ...), each born with an online
// status and given one pulse, as heart-pulse(1) would, through mqtt.js
// (the dashboard's own client) as user heart-pulse with the password in
// $HEART_MQTT_PASSWORD.  Nothing retained; it exits when all is sent.
// Quicker than heart-pulse with N souls under a sanitizer, which is
// what the test needs: the page, not the publisher, is under test.
import mqtt from 'mqtt';

const [url, prefix, n] = process.argv.slice(2);
const groups = ['eu-scout', 'us-scout', 'news', 'stock', 'travel', 'ops', 'mail', 'ci', 'crm', 'docs'];
const c = await mqtt.connectAsync(url, { username: 'heart-pulse',
  password: process.env.HEART_MQTT_PASSWORD, clientId: `fleet-${process.pid}` });
const at = new Date().toISOString();
for (let i = 0; i < Number(n); i++) {
  const id = `${groups[i % 10]}-${String(i).padStart(5, '0')}`;
  c.publish(`${prefix}/${id}/status`, JSON.stringify({ v: 1, status: 'online', agent: id,
    interval: 3600, misses: 3, node: 'fleet', bdseq: 1, host: 'sim', pid: process.pid, at }));
  c.publish(`${prefix}/${id}/pulse`, JSON.stringify({ v: 1, agent: id, seq: 1, mono_ms: i, at,
    host: 'sim', breaker: 'closed', waking: false, cap: { used: 0, cap: 48, tokens: 0, resets: 0 } }));
}
await c.endAsync();
