import test from 'ava';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '@nodelet/api';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { podDnsConfig } from './dns.js';
import { PodNetwork } from './pod-network.js';
import { formatResolvConf, parseResolvConf } from './resolv-conf.js';
import { type GoldenCase, goldenCases, TESTDATA } from './test-golden.js';

/**
 * Golden files of the pod's /etc/hosts and /etc/resolv.conf (testdata/README.md says where each case
 * comes from). Each case is a pod, the node's settings and files, and the pod's IPs; the kubelet's
 * hosts file is written by PodNetwork into a temporary root, and resolv.conf is what containerd writes
 * from the sandbox's DNS config (the node's file when that config is empty).
 *
 * `UPDATE_GOLDEN=1 npx ava …/golden.test.js` rewrites the files; review every change against upstream.
 */
function setUp(c: GoldenCase) {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-golden-'));
  const resolvConf = join(dir, 'resolv.conf');
  const nodeHostsPath = join(dir, 'hosts');
  writeFileSync(resolvConf, c.hostResolvConf);
  writeFileSync(nodeHostsPath, c.nodeHosts ?? '');
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const bus = new EventBus(clock, logger);
  const pod: Pod = {
    ...c.pod,
    metadata: { uid: `uid-${c.name}`, namespace: 'default', ...c.pod.metadata },
    spec: { containers: [{ name: 'c', image: 'busybox' }], ...c.pod.spec },
  };
  const settings = { ...c.settings, resolvConf: c.settings.resolvConf ?? resolvConf };
  const network = new PodNetwork(settings, {
    rootDir: dir,
    nodeIPs: ['192.0.2.10'],
    logger,
    bus,
    nodeHostsPath,
  });
  return { dir, pod, network, bus };
}

const update = process.env.UPDATE_GOLDEN === '1';

function golden(t: { is(a: string, b: string, m?: string): void }, file: string, actual: string): void {
  const url = new URL(file, TESTDATA);
  if (update) writeFileSync(url, actual);
  t.is(actual, readFileSync(url, 'utf8'), file);
}

for (const c of goldenCases()) {
  test(`golden ${c.name}: /etc/hosts and resolv.conf as upstream writes them`, async (t) => {
    const { pod, network } = setUp(c);
    const hostsPath = await network.hostsFile(pod, c.podIPs);
    golden(t, `${c.name}.hosts`, readFileSync(hostsPath!, 'utf8'));
    const config = await network.dnsConfig(pod);
    golden(t, `${c.name}.resolv.conf`, formatResolvConf(config) || c.hostResolvConf);
  });

  test(`golden ${c.name}: warnings`, (t) => {
    const { pod, network } = setUp(c);
    const { warnings } = podDnsConfig(pod, parseResolvConf(c.hostResolvConf), network.dns);
    t.deepEqual(
      warnings.map((w) => `${w.reason}${w.node ? ' (node)' : ''}: ${w.message}`),
      c.warnings ?? [],
    );
  });
}

test('pod warnings become Warning events on the pod; node warnings are only logged', async (t) => {
  const c = goldenCases().find((x) => x.name === 'cluster-first-no-cluster-dns')!;
  const { pod, network, bus } = setUp(c);
  const events: { reason: string; message: string; eventType: string }[] = [];
  bus.subscribe('[Kubelet] Pod Event', (e) => events.push(e));
  await network.dnsConfig(pod);
  t.deepEqual(
    events.map((e) => `${e.eventType} ${e.reason}`),
    ['Warning MissingClusterDNS'],
  );
});
