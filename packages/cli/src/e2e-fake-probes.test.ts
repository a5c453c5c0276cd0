import { rmSync } from 'node:fs';
import test from 'ava';
import { declareUnavailable, kernelUnavailable } from '@nodelet/proxy/testing';
import { NodeletUp, requireKubectl, run } from './e2e-containerd/nodelet-up.js';
import { TestNetns } from './e2e-proxy/cluster.js';
import { pollUntil } from './test-helpers.js';

/**
 * Simulated pods send nothing on the network: `nodelet up` on the fake runtime, inside a network
 * namespace of the test's own where the pod CIDR routes to a bridge with no ports and an nft rule
 * counts every packet sent to it. A pod with httpGet, tcpSocket and grpc readiness and liveness probes
 * becomes Ready and stays so while the counter stays at zero — the fake runtime answers the probes of its
 * own pods. A connection the test itself opens to a pod IP is counted (the counter would see a probe).
 * A failing-probe annotation makes a pod NotReady and restarts it with back-off.
 */
const missing = await kernelUnavailable(['nft']);
const kubectl = requireKubectl(test);
if (missing) declareUnavailable(test, 'fake-runtime probe traffic tests', missing);
const e2e = kubectl && !missing ? test.serial : () => undefined;

const BRIDGE = 'nlguard0';
const POD_CIDR = '10.244.0.0/16';

const probePod = `apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: nodelet.test/busybox:1
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
    livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
  - name: rpc
    image: nodelet.test/busybox:1
    ports: [{containerPort: 9000}]
    readinessProbe: {grpc: {port: 9000}, periodSeconds: 1}
    livenessProbe: {httpGet: {path: /livez, port: 9000}, periodSeconds: 1}
  - name: tcp
    image: nodelet.test/busybox:1
    ports: [{containerPort: 7000}]
    readinessProbe: {tcpSocket: {port: 7000}, periodSeconds: 1}
    livenessProbe: {grpc: {port: 7000}, periodSeconds: 1}
`;

const sickPod = `apiVersion: v1
kind: Pod
metadata:
  name: sick
  annotations: {runtime-fake.nodelet.dev/app: probeFail}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: nodelet.test/busybox:1
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}
    livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1, failureThreshold: 1}
`;

/** Packets sent to the pod CIDR so far, from the nft counter in the namespace. */
async function podCidrPackets(ns: string): Promise<number> {
  const r = await run(ns, 'nft', ['list', 'chain', 'ip', 'nlguard', 'out']);
  const m = /counter packets (\d+)/.exec(r.stdout);
  if (!m) throw new Error(`no counter in nft's listing: ${r.stdout}${r.stderr}`);
  return Number(m[1]);
}

async function must(ns: string, command: string, args: string[], input?: string): Promise<void> {
  const r = await run(ns, command, args, input === undefined ? {} : { input });
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')}: ${r.stderr}`);
}

e2e(
  'nodelet up, fake runtime: httpGet, tcpSocket and grpc probes make a pod Ready with no packet sent to a pod IP; a failing probe makes one NotReady and restarts it with back-off',
  async (t) => {
    t.timeout(240_000);
    const ns = await TestNetns.create();
    t.teardown(() => ns.destroy());
    // The pod CIDR routes to a bridge with no ports (packets to it go nowhere but are sent), and the
    // OUTPUT hook counts them.
    await must(ns.name, 'ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
    await must(ns.name, 'ip', ['link', 'set', BRIDGE, 'up']);
    await must(ns.name, 'ip', ['route', 'add', POD_CIDR, 'dev', BRIDGE]);
    await must(
      ns.name,
      'nft',
      ['-f', '-'],
      `table ip nlguard {\n chain out {\n  type filter hook output priority 0;\n  ip daddr ${POD_CIDR} counter\n }\n}\n`,
    );

    const { dataDir } = NodeletUp.newDataDir();
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const up = await NodeletUp.start(['--hostname-override', 'probes'], { dataDir, netns: ns.name });
    t.teardown(async () => void (await up.stop()));
    await up.waitNodeReady('probes');

    await up.kubectlOk(['apply', '-f', '-'], probePod);
    const ready = () =>
      up.kubectlOk([
        'get',
        'pod',
        'probed',
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
    await pollUntil('pod probed Ready', async () => ((await ready()) === 'True' ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 250,
      describe: () => up.stderr().slice(-3000),
    });
    // It stays Ready over several probe periods (every probe of each container runs each second).
    const since = Date.now();
    await pollUntil(
      'five probe periods while Ready',
      async () => {
        t.is(await ready(), 'True', 'the pod stays Ready');
        return Date.now() - since >= 5000 ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const podIP = (await up.kubectlOk(['get', 'pod', 'probed', '-o', 'jsonpath={.status.podIP}'])).trim();
    t.regex(podIP, /^10\.244\.\d+\.\d+$/);
    t.is(await podCidrPackets(ns.name), 0, 'no packet went to the pod CIDR');

    // The counter sees a connection attempt to a pod IP: one the test makes inside its namespace.
    await run(ns.name, process.execPath, [
      '-e',
      `const s = require('node:net').connect(8080, ${JSON.stringify(podIP)}); s.on('error', () => {}); setTimeout(() => process.exit(0), 300);`,
    ]);
    t.true((await podCidrPackets(ns.name)) >= 1, 'a connection to the pod IP is counted');
    const afterControl = await podCidrPackets(ns.name);

    // Failing probes, by annotation: never Ready, and liveness restarts it with back-off.
    await up.kubectlOk(['apply', '-f', '-'], sickPod);
    const seen = new Set<string>();
    const state = await pollUntil(
      'pod sick restarted twice and backing off',
      async () => {
        const out = await up.kubectlOk([
          'get',
          'pod',
          'sick',
          '-o',
          'jsonpath={.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].state.waiting.reason} {.status.conditions[?(@.type=="Ready")].status}',
        ]);
        const [restarts, reason, isReady] = out.trim().split(' ');
        seen.add(isReady ?? '');
        return Number(restarts) >= 2 && out.includes('CrashLoopBackOff') ? { restarts, reason } : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250, describe: () => up.stderr().slice(-3000) },
    );
    t.is(state.reason, 'CrashLoopBackOff');
    t.false(seen.has('True'), 'a pod whose readiness probe fails is never Ready');
    const events = await up.kubectlOk(['get', 'events', '--field-selector', 'involvedObject.name=sick']);
    t.regex(events, /Unhealthy/);
    t.regex(events, /failed liveness probe, will be restarted/);
    t.is(await podCidrPackets(ns.name), afterControl, 'failing probes sent nothing either');
  },
);
