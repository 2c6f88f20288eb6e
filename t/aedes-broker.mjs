// aedes-broker.mjs - a second, independent MQTT broker for the tests:
// aedes (npm, pinned in package.json), on 127.0.0.1:PORT, in memory.
// Usage: node t/aedes-broker.mjs PORT
import { createServer } from 'node:net';
import { Aedes } from 'aedes';

const broker = await Aedes.createBroker();
const server = createServer(broker.handle);
server.listen(Number(process.argv[2]), '127.0.0.1', () => console.log('listening'));
for (const s of ['SIGTERM', 'SIGINT'])
  process.on(s, () => broker.close(() => server.close(() => process.exit(0))));
