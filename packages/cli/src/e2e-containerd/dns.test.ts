import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import { BUSYBOX, isRunning, KubeletChild, nodeName, sweepNode, Workspace } from './helpers.js';

/**
 * Names and addresses on real containerd: static pods print their /etc/hosts and /etc/resolv.conf, which
 * must be the golden files of the kubelet's testdata (the same specs, the node's resolv.conf given by
 * `resolvConf`, POD_IP the pod's IP); a pod with a 70-character name runs with its hostname cut to 63;
 * a pod with `dnsPolicy: None` and no `dnsConfig` is refused naming the field, and the others run.
 */
const containerd = await requireContainerd(test);

const TESTDATA = new URL('../../../kubelet/src/network/testdata/', import.meta.url);
const golden = (file: string) => readFileSync(new URL(file, TESTDATA), 'utf8');

interface GoldenCase {
  name: string;
  hostResolvConf: string;
  settings: { clusterDNS: string[]; clusterDomain: string };
  pod: Pod;
}
const cases = (
  JSON.parse(readFileSync(new URL('cases.json', TESTDATA), 'utf8')) as { cases: GoldenCase[] }
).cases.filter((c) => c.name.startsWith('e2e-'));

if (containerd) {
  const node = nodeName('dns');
  const ws = new Workspace('  kubeletConfig: ./kubelet.yaml\n');
  let k: KubeletChild | undefined;

  test.after.always(async () => {
    await k?.stop();
    await sweepNode(containerd.endpoint, node);
    await ws.dispose();
  });

  const staticPod = (name: string, spec: object, command: string) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        terminationGracePeriodSeconds: 2,
        containers: [{ name: 'main', image: BUSYBOX, command: ['sh', '-c', command] }],
        ...spec,
      },
    });

  /** The pod's log once it is `complete`, or the last one seen when the deadline passes. */
  const logOf = (pod: string, complete: (log: string) => boolean) =>
    pollUntil(
      `${pod}: its log`,
      async () => {
        const r = await k!.logs(pod);
        return r.code === 0 && complete(r.stdout) ? r.stdout : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );

  test.before(async () => {
    // Every e2e case shares the node's settings: one kubelet runs them all.
    const { settings, hostResolvConf } = cases[0]!;
    writeFileSync(join(ws.dir, 'resolv.conf'), hostResolvConf);
    writeFileSync(
      join(ws.dir, 'kubelet.yaml'),
      [
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'kind: KubeletConfiguration',
        `clusterDNS: [${settings.clusterDNS.join(', ')}]`,
        `clusterDomain: ${settings.clusterDomain}`,
        'resolvConf: ./resolv.conf',
        // The flags' defaults, not the file's: `nodelet logs` asks the kubelet API anonymously.
        'authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}',
        'authorization: {mode: AlwaysAllow}',
        '',
      ].join('\n'),
    );
    k = await KubeletChild.start(ws, node);
  });

  for (const c of cases) {
    test.serial(
      `${c.name}: /etc/hosts and /etc/resolv.conf in a containerd pod are the golden files`,
      async (t) => {
        const manifestName = c.pod.metadata!.name!;
        const podName = `${manifestName}-${node}`;
        ws.write(
          `${manifestName}.json`,
          staticPod(manifestName, c.pod.spec!, 'cat /etc/hosts /etc/resolv.conf; sleep 3600'),
        );
        const running = await k!.waitPod(podName, 'Running', (p) => isRunning(p, 'main'));
        const podIP = running.status!.podIP!;
        const hosts = golden(`${c.name}.hosts`).replaceAll('POD_IP', podIP);
        const resolv = golden(`${c.name}.resolv.conf`);
        const log = await logOf(podName, (l) => l.length >= hosts.length + resolv.length);
        t.is(log, hosts + resolv);
      },
    );
  }

  test.serial(
    "a host-network pod gets the node's /etc/hosts with its aliases, and the node's resolv.conf",
    async (t) => {
      // ClusterFirst on the host network is Default (dns.go getPodDNSType); the hosts file is the node's
      // under upstream's header, hostAliases after it (kubelet_pods.go nodeHostsFileContent).
      const spec = {
        hostNetwork: true,
        hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar.local'] }],
      };
      ws.write('hostnet.json', staticPod('dns-hostnet', spec, 'cat /etc/hosts /etc/resolv.conf; sleep 3600'));
      const podName = `dns-hostnet-${node}`;
      await k!.waitPod(podName, 'Running', (p) => isRunning(p, 'main'));
      const hosts =
        '# Kubernetes-managed hosts file (host network).\n' +
        readFileSync('/etc/hosts', 'utf8') +
        '\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n';
      // The node's settings as the DNS config, rewritten by containerd in its order.
      const resolv = 'search example.com\nnameserver 192.0.2.53\noptions edns0\n';
      t.is(cases[0]!.hostResolvConf, 'nameserver 192.0.2.53\nsearch example.com\noptions edns0\n');
      t.is(await logOf(podName, (l) => l.length >= hosts.length + resolv.length), hosts + resolv);
    },
  );

  test.serial('a pod whose name has 70 characters runs with its hostname cut to 63', async (t) => {
    const manifestName = 'h'.repeat(70 - node.length - 1);
    const podName = `${manifestName}-${node}`;
    t.is(podName.length, 70);
    ws.write('long.json', staticPod(manifestName, {}, 'hostname; sleep 3600'));
    await k!.waitPod(podName, 'Running', (p) => isRunning(p, 'main'));
    const truncated = podName.slice(0, 63).replace(/[-.]+$/, '');
    t.is(await logOf(podName, (l) => l.endsWith('\n')), `${truncated}\n`);
  });

  test.serial(
    'dnsPolicy None without dnsConfig is refused naming the field; the other pods keep running',
    async (t) => {
      ws.write('bad.json', staticPod('dns-bad', { dnsPolicy: 'None' }, 'sleep 3600'));
      const message = 'spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None';
      await pollUntil(
        'the kubelet to refuse bad.json',
        async () => (k!.stderr().includes(message) ? true : undefined),
        {
          timeoutMs: 30_000,
          intervalMs: 200,
          describe: () => k!.stderr().slice(-2000),
        },
      );
      t.is(await k!.pod(`dns-bad-${node}`), undefined);
      for (const c of cases) {
        const pod = await k!.pod(`${c.pod.metadata!.name}-${node}`);
        t.true(!!pod && isRunning(pod, 'main'), `${c.name} still runs`);
      }
    },
  );
}
