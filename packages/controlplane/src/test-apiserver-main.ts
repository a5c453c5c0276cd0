/**
 * Test support, run as a child process: a control plane on a fresh data directory and a free port, with a
 * stand-in kubelet for node n1 and pod p on it, so a test can measure the server's memory (its own
 * process's RSS) and see whether it dies. Its options come as JSON in argv[2]; it prints one JSON line
 * (url, CA, admin credentials) once serving, logs errors to stderr, and stops on SIGTERM.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, RealClock } from '@nodelet/kernel';
import { ControlPlane, type ControlPlaneOptions } from './control-plane.js';
import { clusterHandle } from './test-helpers.js';
import { startKubeletStub } from './test-kubelet-stub.js';
import { MemorySink } from '@nodelet/kernel';

const options = JSON.parse(process.argv[2] ?? '{}') as Partial<ControlPlaneOptions>;
const dataDir = await mkdtemp(join(tmpdir(), 'nodelet-cp-'));
const cp = new ControlPlane({
  clock: new RealClock(),
  logger: createLogger({ level: 'error' }),
  port: 0,
  ...options,
  dataDir,
});
await cp.start();
const kubelet = await startKubeletStub(join(dataDir, 'pki'));
const api = clusterHandle(cp, dataDir, new MemorySink()).api;
await api('POST', '/api/v1/nodes', { metadata: { name: 'n1' } });
await api(
  'PATCH',
  '/api/v1/nodes/n1/status',
  {
    status: {
      addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
      daemonEndpoints: { kubeletEndpoint: { Port: kubelet.port } },
    },
  },
  { 'content-type': 'application/merge-patch+json' },
);
await api('POST', '/api/v1/namespaces/default/pods', {
  metadata: { name: 'p' },
  spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox' }] },
});
await api('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'x' } });
const { cert, key } = cp.adminCredentials;
process.stdout.write(`${JSON.stringify({ url: cp.url, ca: cp.caCert, cert, key })}\n`);
process.once('SIGTERM', () => {
  void (async () => {
    await kubelet.close();
    await cp.stop();
    await rm(dataDir, { recursive: true, force: true });
    process.exit(0);
  })();
});
