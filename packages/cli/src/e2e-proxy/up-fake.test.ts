import { rmSync } from 'node:fs';
import test from 'ava';
import { declareUnavailable, kernelUnavailable, netnsSupport } from '@nodelet/proxy/testing';
import { NodeletUp, requireKubectl, run } from '../e2e-containerd/nodelet-up.js';
import { freePort, pollUntil } from '../test-helpers.js';
import { dnatTargets, kubeChains, natRules, nodeletProxy, SliceWatch, TestNetns } from './cluster.js';

/**
 * `nodelet up` with its proxy, on the fake runtime, driven by the real kubectl: a Service and its pods
 * applied with kubectl get rules (iptables, as root) or listeners (userspace) for the ClusterIP; deleting
 * and adding pods changes them within a second of the EndpointSlice change; a bad EndpointSlice is
 * logged once and skipped; a Service of another proxy gets nothing; the rules outlive the process and
 * `nodelet proxy --cleanup` removes them.
 *
 * As root the cluster runs inside a network namespace of the test's own (so are kubectl and the
 * iptables-save that reads the rules): nothing is programmed on the host, and the namespace goes with
 * everything in it. The fake runtime's pod IPs (10.244.0.0/16) are only rule targets: no packet is sent.
 * Without root the proxy runs in userspace mode on the host and the test reads its listeners from
 * /proc/net/tcp, again without connecting.
 */
const isRoot = process.getuid?.() === 0;
// Every await before the first declaration: ava wants all tests declared in one tick.
const netns = isRoot ? await netnsSupport() : { ok: false, reason: 'not root' };
// iptables mode needs the iptables tools (inside the test's namespace, as on the host).
const iptablesMissing =
  isRoot && netns.ok
    ? await kernelUnavailable(['iptables-nft-restore', 'iptables-legacy-restore'])
    : undefined;
const kubectl = requireKubectl(test);
if (isRoot && !netns.ok) {
  if (process.env.CI === 'true')
    test('the proxy end-to-end tests need ip netns in CI', (t) => t.fail(netns.reason));
  else
    test.skip(`ip netns does not work here (${netns.reason}); skipping the proxy end-to-end tests`, () =>
      undefined);
}
if (!isRoot && process.env.CI === 'true') {
  test('the iptables proxy end-to-end tests need root in CI (CI=true)', (t) =>
    t.fail('run the suite as root: nodelet up --proxy-mode iptables programs a network namespace'));
}

if (iptablesMissing) declareUnavailable(test, 'nodelet up iptables proxy end-to-end tests', iptablesMissing);

type Mode = 'iptables' | 'userspace';
const modes: Mode[] =
  kubectl && (netns.ok || !isRoot)
    ? isRoot && !iptablesMissing
      ? ['iptables', 'userspace']
      : ['userspace']
    : [];

/** Services in these tests select pods labelled app=<this>. */
const APP = 'web';

const pod = (name: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, labels: {app: ${APP}}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: web, image: nodelet.test/busybox:1, ports: [{containerPort: 8080}]}]
`;

const service = (name: string, port: number, labels = '{}') => `apiVersion: v1
kind: Service
metadata: {name: ${name}, labels: ${labels}}
spec:
  selector: {app: ${APP}}
  ports: [{name: http, port: ${port}, targetPort: 8080}]
`;

for (const mode of modes) {
  const ctx: {
    ns?: TestNetns;
    dataDir?: string;
    up?: NodeletUp;
    watch?: SliceWatch;
    port?: number;
    clusterIP?: string;
    ips: Map<string, string>;
    latencies: number[];
  } = { ips: new Map(), latencies: [] };

  /** What the proxy made for a ClusterIP: DNAT targets (iptables) or ['listening'] (userspace); [] for nothing. */
  async function view(clusterIP: string, port: number): Promise<string[]> {
    if (mode === 'iptables') return dnatTargets(await natRules(ctx.ns?.name), clusterIP, port) ?? [];
    const tcp = await run(ctx.ns?.name, 'cat', ['/proc/net/tcp']);
    const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
    return tcp.stdout
      .split('\n')
      .some((l) => l.trim().split(/\s+/)[1] === local && l.trim().split(/\s+/)[3] === '0A')
      ? ['listening']
      : [];
  }

  /** The view a set of usable endpoint IPs gives. */
  const expected = (ips: string[]) =>
    mode === 'iptables' ? ips.map((ip) => `${ip}:8080`).sort() : ips.length > 0 ? ['listening'] : [];

  async function waitView(what: string, want: string[], timeoutMs = 20_000): Promise<number> {
    let last: string[] = [];
    return pollUntil(
      what,
      async () => {
        last = await view(ctx.clusterIP!, ctx.port!);
        return last.join(',') === want.join(',') ? Date.now() : undefined;
      },
      {
        timeoutMs,
        intervalMs: 10,
        describe: () =>
          `${JSON.stringify(last)} (want ${JSON.stringify(want)})\n${ctx.up?.stderr().slice(-3000)}`,
      },
    );
  }

  /**
   * Runs `change` (which resolves with the Service's usable endpoint IPs after it), and measures from
   * the EndpointSlice change that left those (as kubectl's watch saw it) to the first read of the rules
   * showing exactly them. The rules are read in a loop from the start, so a change that is quicker than
   * the test learning the new pod IP is still timed from when it happened.
   */
  async function measure(
    what: string,
    before: string[],
    change: () => Promise<string[]>,
  ): Promise<number | undefined> {
    const since = Date.now();
    const reads: { at: number; view: string }[] = [];
    let reading = true;
    const reader = (async () => {
      while (reading) {
        const v = await view(ctx.clusterIP!, ctx.port!);
        reads.push({ at: Date.now(), view: v.join(',') });
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    try {
      const usable = await change();
      const want = expected(usable).join(',');
      // A change the mode does not show (userspace: one endpoint of two gone) has nothing to time.
      if (want === expected(before).join(',')) return undefined;
      const rule = await pollUntil(
        `${mode} rules to follow: ${what}`,
        async () => reads.find((r) => r.view === want),
        {
          timeoutMs: 20_000,
          describe: () => `${reads.at(-1)?.view} (want ${want})\n${ctx.up?.stderr().slice(-3000)}`,
        },
      );
      const slice = await pollUntil(
        `the EndpointSlice change: ${what}`,
        async () => ctx.watch!.find(usable, since),
        {
          timeoutMs: 20_000,
          describe: () => JSON.stringify(ctx.watch!.changes.slice(-5)),
        },
      );
      return Math.max(0, rule.at - slice.at);
    } finally {
      reading = false;
      await reader;
    }
  }

  /** The cluster of this mode, started by the first test that needs it (the modes' clusters run one at a time). */
  let started: Promise<NodeletUp> | undefined;
  const cluster = () => (started ??= startCluster());

  /**
   * What the later tests start from, made here when no earlier test left it: the Service `web` and its
   * pod web-3 Running with an IP. Returns web-3's IP.
   */
  async function workload(): Promise<string> {
    const up = await cluster();
    if (!ctx.clusterIP) {
      ctx.port = await freePort();
      await up.kubectlOk(['apply', '-f', '-'], service('web', ctx.port));
      ctx.clusterIP = (
        await up.kubectlOk(['get', 'service', 'web', '-o', 'jsonpath={.spec.clusterIP}'])
      ).trim();
    }
    if (!ctx.ips.has('web-3')) {
      await up.kubectlOk(['apply', '-f', '-'], pod('web-3'));
      const ip3 = await pollUntil(
        'web-3 Running with an IP',
        async () => (await up.podIPs(`app=${APP}`)).get('web-3'),
        { timeoutMs: 30_000 },
      );
      ctx.ips.set('web-3', ip3);
    }
    const ip3 = ctx.ips.get('web-3')!;
    await waitView('the rules of web-3', expected([ip3]));
    return ip3;
  }

  async function startCluster(): Promise<NodeletUp> {
    if (mode === 'iptables' || isRoot) ctx.ns = await TestNetns.create();
    // A low minSyncPeriod: the measurement below is of the pipeline (watch, change tracker, rule
    // update), not of the rate limit a sync may wait out (upstream default 1 s).
    const { dataDir, configPath } = NodeletUp.newDataDir(
      `apiVersion: nodelet.dev/v1alpha1\nkind: NodeletConfiguration\nproxy:\n  minSyncPeriod: 100ms\n`,
    );
    ctx.dataDir = dataDir;
    ctx.up = await NodeletUp.start(
      ['--proxy-mode', mode, '--config', configPath!, '--hostname-override', `proxy-${mode}`],
      { dataDir, netns: ctx.ns?.name },
    );
    await ctx.up.waitNodeReady(`proxy-${mode}`);
    return ctx.up;
  }

  test.after.always(async () => {
    ctx.watch?.stop();
    await ctx.up?.stop();
    if (ctx.dataDir) rmSync(ctx.dataDir, { recursive: true, force: true });
    await ctx.ns?.destroy();
  });

  test.serial(
    `${mode}: kubectl apply a Service and pods, the ClusterIP gets ${mode === 'iptables' ? 'DNAT rules to the pods' : 'a listener'}; deleting and adding pods changes them within 1 s of the EndpointSlice change`,
    async (t) => {
      const up = await cluster();
      t.regex(
        up.stdout(),
        new RegExp(
          `^proxy: ${mode} mode, node proxy-${mode}, healthz http://127\\.0\\.0\\.1:\\d+/healthz$`,
          'm',
        ),
      );
      ctx.port = await freePort();
      await up.kubectlOk(
        ['apply', '-f', '-'],
        [service('web', ctx.port), pod('web-1'), pod('web-2')].join('---\n'),
      );
      ctx.clusterIP = (
        await up.kubectlOk(['get', 'service', 'web', '-o', 'jsonpath={.spec.clusterIP}'])
      ).trim();
      t.regex(ctx.clusterIP, /^10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+$/, 'a ClusterIP from 10.96.0.0/12');
      ctx.ips = await pollUntil(
        'both pods Running with an IP',
        async () => {
          const ips = await up.podIPs(`app=${APP}`);
          return ips.size === 2 ? ips : undefined;
        },
        { timeoutMs: 30_000 },
      );
      const [ip1, ip2] = [ctx.ips.get('web-1')!, ctx.ips.get('web-2')!];
      await waitView('the rules of both pods', expected([ip1, ip2]));
      ctx.watch = new SliceWatch(up, 'web');
      await pollUntil(
        'the slice watch to list',
        async () => (ctx.watch!.changes.length > 0 ? true : undefined),
        {
          timeoutMs: 20_000,
        },
      );

      const latencies: Record<string, number | undefined> = {};
      latencies['delete web-1'] = await measure('delete web-1', [ip1, ip2], async () => {
        await up.kubectlOk(['delete', 'pod', 'web-1', '--wait=false']);
        return [ip2];
      });
      latencies['delete web-2, the last'] = await measure('delete web-2', [ip2], async () => {
        await up.kubectlOk(['delete', 'pod', 'web-2', '--wait=false']);
        return [];
      });
      latencies['add web-3'] = await measure('add web-3', [], async () => {
        await up.kubectlOk(['apply', '-f', '-'], pod('web-3'));
        const ip3 = await pollUntil(
          'web-3 Running with an IP',
          async () => (await up.podIPs(`app=${APP}`)).get('web-3'),
          {
            timeoutMs: 20_000,
          },
        );
        ctx.ips.set('web-3', ip3);
        return [ip3];
      });
      t.log(
        `${mode}: EndpointSlice change → rules (ms):`,
        Object.entries(latencies)
          .map(([what, ms]) => `${what} ${ms ?? '(not visible in this mode)'}`)
          .join(', '),
      );
      for (const [what, ms] of Object.entries(latencies)) {
        if (ms !== undefined) t.true(ms < 1000, `${what}: ${ms} ms`);
      }
      t.true(Object.values(latencies).filter((ms) => ms !== undefined).length >= 2, 'changes were timed');
    },
  );

  const slice = (name: string, address: string, port: number) => `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ${name}, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: ["${address}"], conditions: {ready: true}}]
ports: [{name: http, port: ${port}, protocol: TCP}]
`;

  test.serial(
    `${mode}: a bad EndpointSlice is logged once and skipped, the rules of its last good version stay; a Service of another proxy gets none`,
    async (t) => {
      const ip3 = await workload();
      const up = ctx.up!;
      // A slice added by hand (as for endpoints outside the cluster), then broken by an update.
      await up.kubectlOk(['apply', '-f', '-'], slice('web-extra', '10.244.99.9', 8080));
      await waitView('the extra endpoint', expected([ip3, '10.244.99.9']));
      await up.kubectlOk(['apply', '-f', '-'], slice('web-extra', 'not-an-ip', 8080));
      const bad =
        'ignoring invalid EndpointSlice default/web-extra: endpoints[0].addresses[0]: Invalid value: "not-an-ip": must be a valid IPv4 address; its last valid version stays in force';
      await pollUntil(
        'the proxy to refuse the slice',
        async () => (up.stderr().includes(bad) ? true : undefined),
        {
          timeoutMs: 10_000,
          describe: () => up.stderr().slice(-3000),
        },
      );
      await up.kubectlOk(['apply', '-f', '-'], slice('web-extra', '10.244.99.9', 70000));
      const badPort =
        'ignoring invalid EndpointSlice default/web-extra: ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive; its last valid version stays in force';
      await pollUntil(
        'the proxy to refuse the port',
        async () => (up.stderr().includes(badPort) ? true : undefined),
        {
          timeoutMs: 10_000,
          describe: () => up.stderr().slice(-3000),
        },
      );
      t.deepEqual(
        await view(ctx.clusterIP!, ctx.port!),
        expected([ip3, '10.244.99.9']),
        'the last good version stays',
      );
      t.is(up.stderr().split(bad).length - 1, 1, 'one line for the bad address');

      // Another proxy's Service, then one of ours: once ours has rules, the other was seen and skipped.
      const otherPort = await freePort();
      const probePort = await freePort();
      await up.kubectlOk(
        ['apply', '-f', '-'],
        [
          service('other', otherPort, '{service.kubernetes.io/service-proxy-name: someone-else}'),
          service('probe', probePort),
        ].join('---\n'),
      );
      const ipOf = async (name: string) =>
        (await up.kubectlOk(['get', 'service', name, '-o', 'jsonpath={.spec.clusterIP}'])).trim();
      const [otherIP, probeIP] = [await ipOf('other'), await ipOf('probe')];
      await pollUntil(
        'the probe Service to get rules',
        async () => ((await view(probeIP, probePort)).length > 0 ? true : undefined),
        {
          timeoutMs: 10_000,
        },
      );
      t.deepEqual(await view(otherIP, otherPort), [], 'no rules for the Service of another proxy');

      await up.kubectlOk(['delete', 'endpointslice', 'web-extra']);
      await waitView('the extra endpoint to go', expected([ip3]));
    },
  );

  test.serial(
    mode === 'iptables'
      ? 'iptables: the rules stay in force when nodelet up stops; nodelet proxy --cleanup removes every rule'
      : 'userspace: nothing outlives the process: the listener closes when nodelet up stops',
    async (t) => {
      const ip3 = await workload();
      const up = ctx.up!;
      ctx.watch?.stop();
      const exit = await up.stop();
      t.is(exit.code, 0, up.stderr().slice(-2000));
      if (mode === 'userspace') {
        t.deepEqual(await view(ctx.clusterIP!, ctx.port!), []);
        return;
      }
      t.deepEqual(
        await view(ctx.clusterIP!, ctx.port!),
        expected([ip3]),
        'DNAT to the pod after the proxy stopped',
      );
      const cleanup = await nodeletProxy(ctx.ns!.name, ['--cleanup']);
      t.is(cleanup.code, 0, cleanup.stderr);
      t.regex(cleanup.stderr, /removed the proxy rules of every mode/);
      t.deepEqual(await kubeChains(ctx.ns!.name), [], 'no KUBE-* chain left in any table of either back end');
    },
  );
}
