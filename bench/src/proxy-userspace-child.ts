/**
 * The userspace proxy in a process of its own, for bench/src/proxy.ts: one service whose endpoint is
 * 127.0.0.1:<port from argv>, proxied on a free port of 127.0.0.1 that it prints. It stops when its
 * stdin closes, so it never outlives the bench.
 *
 *   node dist/proxy-userspace-child.js <endpoint port>
 */
import { createLogger, RealClock } from '@nodelet/kernel';
import { ChangeTracker, defaultNodeContext } from '@nodelet/proxy';
import { UserspaceBackend } from '@nodelet/proxy-userspace';

const endpointPort = Number(process.argv[2]);
if (!Number.isInteger(endpointPort) || endpointPort <= 0 || endpointPort > 65535) {
  console.error('usage: proxy-userspace-child <endpoint port (1-65535)>');
  process.exit(2);
}
const quiet = createLogger({ sink: () => undefined });
const backend = new UserspaceBackend({ clock: new RealClock(), logger: quiet, ports: 'ephemeral' });
const tracker = new ChangeTracker(defaultNodeContext('bench-node'), quiet);
tracker.upsertService({
  kind: 'Service',
  metadata: { name: 'bulk', namespace: 'bench' },
  spec: { clusterIP: '10.96.0.1', ports: [{ port: 80 }] },
});
tracker.upsertEndpointSlice({
  kind: 'EndpointSlice',
  metadata: { name: 'bulk-1', namespace: 'bench', labels: { 'kubernetes.io/service-name': 'bulk' } },
  addressType: 'IPv4',
  endpoints: [{ addresses: ['127.0.0.1'] }],
  ports: [{ port: endpointPort }],
});
const c = tracker.commit();
await backend.sync(c.state, c.changes, true);
process.stdout.write(`${backend.addressOf('bench/bulk')!.port}\n`);
process.stdin.resume();
process.stdin.on('end', () => void backend.stop().then(() => process.exit(0)));
