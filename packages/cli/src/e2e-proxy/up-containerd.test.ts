import { rmSync } from 'node:fs';
import test, { type ExecutionContext } from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { BUSYBOX, httpGet, inPodCidr, nodeName, sweepNode } from '../e2e-containerd/helpers.js';
import { NodeletUp, requireKubectl, run } from '../e2e-containerd/nodelet-up.js';
import { pollUntil } from '../test-helpers.js';
import { dnatTargets, kubeChains, natRules, nftDnatTargets, nftTable, nodeletProxy } from './cluster.js';

/**
 * One command gives a cluster whose ClusterIPs answer: `nodelet up --runtime containerd --proxy-mode
 * iptables` (and nftables), a Service and two busybox httpd pods applied with kubectl, and an HTTP GET
 * from this host to the ClusterIP returns a pod's page; delete one pod and only the other answers. With
 * iptables the rules stay in force while nodelet up is stopped and across its restart (the pod keeps
 * answering), and `nodelet proxy --cleanup` removes every rule.
 *
 * Network safety: before any packet goes to a ClusterIP, the service range is routed to the CNI bridge
 * (`ip route add 10.96.0.0/12 dev nodelet0` when no route for it exists; removed at the end), so even
 * without a rule nothing could leave the machine; and each GET waits for the DNAT rule of that ClusterIP
 * to name only this cluster's pod IPs (10.88.0.0/16). Connection attempts are bounded.
 *
 * The proxy programs the host's own tables here (the pods are on the host's bridge); the tests run one
 * after the other and `nodelet proxy --cleanup` runs at the end whatever happened.
 */
const containerd = await requireContainerd(test);
const kubectl = requireKubectl(test);

const SERVICE_CIDR = '10.96.0.0/12';
const BRIDGE = 'nodelet0';

if (containerd && kubectl) {
  const state: {
    routeChecked: boolean;
    routeAdded: boolean;
    clusters: NodeletUp[];
    dirs: string[];
    nodes: string[];
  } = {
    routeChecked: false,
    routeAdded: false,
    clusters: [],
    dirs: [],
    nodes: [],
  };

  /**
   * Routes the service range to the CNI bridge unless a route for it exists (then it must go there too).
   * Called before the first packet; the bridge exists once a pod has run.
   */
  async function ensureRoute(): Promise<void> {
    if (state.routeChecked) return;
    const link = await run(undefined, 'ip', ['link', 'show', BRIDGE]);
    if (link.code !== 0)
      throw new Error(`the CNI bridge ${BRIDGE} is missing (run scripts/containerd/setup.sh)`);
    const existing = await run(undefined, 'ip', ['route', 'show', 'exact', SERVICE_CIDR]);
    if (existing.stdout.trim() === '') {
      const added = await run(undefined, 'ip', ['route', 'add', SERVICE_CIDR, 'dev', BRIDGE]);
      if (added.code !== 0) throw new Error(`ip route add ${SERVICE_CIDR} dev ${BRIDGE}: ${added.stderr}`);
      state.routeAdded = true;
    }
    state.routeChecked = true;
  }

  test.after.always(async () => {
    for (const up of state.clusters) await up.stop();
    for (const node of state.nodes) await sweepNode(containerd.endpoint, node);
    await nodeletProxy(undefined, ['--cleanup']);
    if (state.routeAdded) await run(undefined, 'ip', ['route', 'del', SERVICE_CIDR, 'dev', BRIDGE]);
    for (const up of state.clusters) up.dispose();
    for (const dir of state.dirs) rmSync(dir, { recursive: true, force: true });
  });

  const pod = (name: string, app: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, labels: {app: ${app}}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: ${BUSYBOX}
    env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
    ports: [{containerPort: 8080}]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
    command: [sh, -c, 'mkdir -p /www && echo "hello from $POD_NAME" > /www/index.html && exec httpd -f -p 8080 -h /www']
`;
  const service = (app: string) => `apiVersion: v1
kind: Service
metadata: {name: ${app}}
spec:
  selector: {app: ${app}}
  ports: [{name: http, port: 80, targetPort: 8080}]
`;

  type Mode = 'iptables' | 'nftables';

  /** Where the proxy's rules send clusterIP:80 now (`ip:port`, sorted); [] when there is no rule. */
  async function targets(mode: Mode, clusterIP: string): Promise<string[]> {
    return (
      (mode === 'iptables'
        ? dnatTargets(await natRules(), clusterIP, 80)
        : nftDnatTargets(await nftTable(), clusterIP, 80)) ?? []
    );
  }

  /** Waits until the rules send clusterIP:80 to exactly these pod IPs (all on the CNI bridge). */
  async function waitTargets(mode: Mode, clusterIP: string, podIPs: string[], up: NodeletUp): Promise<void> {
    const want = podIPs.map((ip) => `${ip}:8080`).sort();
    if (!podIPs.every(inPodCidr)) throw new Error(`pod IPs ${podIPs.join(', ')} are not on the CNI bridge`);
    let last: string[] = [];
    await pollUntil(
      `${mode} rules for ${clusterIP}:80 → ${want.join(', ')}`,
      async () => {
        last = await targets(mode, clusterIP);
        return last.join(',') === want.join(',') ? true : undefined;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 100,
        describe: () => `${last.join(', ')}\n${up.stderr().slice(-3000)}`,
      },
    );
  }

  /**
   * `count` GETs of http://clusterIP/ from this host, after checking that the ClusterIP is routed to the
   * bridge and that the rules send it to pod IPs only; returns the pages, in order.
   */
  async function getPages(mode: Mode, clusterIP: string, count: number): Promise<string[]> {
    await ensureRoute();
    const route = await run(undefined, 'ip', ['route', 'get', clusterIP]);
    if (!new RegExp(`\\bdev ${BRIDGE}\\b`).test(route.stdout)) {
      throw new Error(`refusing to connect: ${clusterIP} is not routed to ${BRIDGE}: ${route.stdout}`);
    }
    const now = await targets(mode, clusterIP);
    if (now.length === 0 || !now.every((t) => inPodCidr(t.split(':')[0]))) {
      throw new Error(`refusing to connect: the rules for ${clusterIP}:80 send it to ${JSON.stringify(now)}`);
    }
    const pages: string[] = [];
    for (let i = 0; i < count; i++) {
      try {
        pages.push((await httpGet(clusterIP, 80, '/', 3000)).body.trim());
      } catch (err) {
        throw new Error(
          `${(err as Error).message} (GET ${i + 1} of ${count})\n${await whyNoAnswer(clusterIP, now)}`,
        );
      }
    }
    return pages;
  }

  /** What a failed GET leaves to read: each target asked directly, the rules and conntrack for the ClusterIP. */
  async function whyNoAnswer(clusterIP: string, targetsNow: string[]): Promise<string> {
    const lines: string[] = [];
    for (const target of targetsNow) {
      const [ip, port] = target.split(':');
      const direct = await httpGet(ip!, Number(port), '/', 2000).then(
        (r) => `answers ${r.status} ${r.body.trim()}`,
        (e: Error) => e.message,
      );
      lines.push(`direct GET of ${target}: ${direct}`);
    }
    const rules = (await natRules()).split('\n').filter((l) => /KUBE|CNI|^\*|^:/.test(l));
    lines.push('nat rules (both back ends):', ...rules);
    const conntrack = await run(undefined, 'grep', ['-a', clusterIP, '/proc/net/nf_conntrack']);
    lines.push('conntrack:', conntrack.stdout);
    return lines.join('\n');
  }

  async function startCluster(
    t: ExecutionContext,
    mode: Mode,
    tag: string,
    dataDir?: string,
  ): Promise<NodeletUp> {
    const started = Date.now();
    const node = nodeName(tag);
    if (!state.nodes.includes(node)) state.nodes.push(node);
    const dir = dataDir ?? NodeletUp.newDataDir().dataDir;
    if (!state.dirs.includes(dir)) state.dirs.push(dir);
    const up = await NodeletUp.start(
      ['--runtime', 'containerd', '--proxy-mode', mode, '--hostname-override', node],
      { dataDir: dir },
    );
    state.clusters.push(up);
    await up.waitNodeReady(node);
    t.log(`${mode}: nodelet up serving with a Ready node in ${Date.now() - started} ms`);
    return up;
  }

  /** Applies the Service and web-1, web-2; returns the ClusterIP and the pod IPs once both are ready. */
  async function deploy(
    up: NodeletUp,
    app: string,
  ): Promise<{ clusterIP: string; ips: Map<string, string> }> {
    await up.kubectlOk(
      ['apply', '-f', '-'],
      [service(app), pod('web-1', app), pod('web-2', app)].join('---\n'),
    );
    const clusterIP = (
      await up.kubectlOk(['get', 'service', app, '-o', 'jsonpath={.spec.clusterIP}'])
    ).trim();
    await up.kubectlOk(['wait', '--for=condition=Ready', 'pod/web-1', 'pod/web-2', '--timeout=90s']);
    return { clusterIP, ips: await up.podIPs(`app=${app}`) };
  }

  async function scenario(
    t: ExecutionContext,
    mode: Mode,
    up: NodeletUp,
  ): Promise<{ clusterIP: string; ip2: string }> {
    const app = `web-${mode}`;
    const applied = Date.now();
    const { clusterIP, ips } = await deploy(up, app);
    t.log(`${mode}: both pods Ready ${Date.now() - applied} ms after kubectl apply`);
    const [ip1, ip2] = [ips.get('web-1')!, ips.get('web-2')!];
    t.regex(clusterIP, /^10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+$/, 'a ClusterIP from 10.96.0.0/12');
    await waitTargets(mode, clusterIP, [ip1, ip2], up);

    const started = Date.now();
    const pages = await getPages(mode, clusterIP, 20);
    t.log(`${mode}: 20 GETs of http://${clusterIP}/ in ${Date.now() - started} ms`);
    t.true(
      pages.every((p) => p === 'hello from web-1' || p === 'hello from web-2'),
      pages.join(' | '),
    );
    t.deepEqual([...new Set(pages)].sort(), ['hello from web-1', 'hello from web-2'], 'both pods answer');

    const deleting = Date.now();
    await up.kubectlOk(['delete', 'pod', 'web-1', '--wait=false']);
    await waitTargets(mode, clusterIP, [ip2], up);
    t.log(`${mode}: rules without web-1 ${Date.now() - deleting} ms after kubectl delete`);
    t.deepEqual(
      await getPages(mode, clusterIP, 10),
      Array(10).fill('hello from web-2'),
      'only web-2 answers',
    );
    return { clusterIP, ip2 };
  }

  test.serial(
    'iptables: GET http://<ClusterIP>/ from the host returns a pod page; after deleting one pod only the other answers; the rules outlive nodelet up and nodelet proxy --cleanup removes them',
    async (t) => {
      const up = await startCluster(t, 'iptables', 'proxy-ipt');
      t.regex(up.stdout(), /^proxy: iptables mode, node \S+, healthz http:\/\/127\.0\.0\.1:\d+\/healthz$/m);
      const { clusterIP, ip2 } = await scenario(t, 'iptables', up);

      // Stopped: the rules stay in force and the running pod keeps answering at its ClusterIP.
      t.is((await up.stop()).code, 0, up.stderr().slice(-2000));
      t.deepEqual(await targets('iptables', clusterIP), [`${ip2}:8080`]);
      t.is(
        (await getPages('iptables', clusterIP, 1))[0],
        'hello from web-2',
        'answers while nodelet up is down',
      );

      // Restarted on the same state: the proxy lists again and rewrites its rules; traffic keeps flowing.
      const again = await startCluster(t, 'iptables', 'proxy-ipt', up.dataDir);
      await pollUntil(
        'the restarted proxy to sync',
        async () => (again.stderr().includes('synced proxy rules') ? true : undefined),
        { timeoutMs: 20_000, describe: () => again.stderr().slice(-3000) },
      );
      await waitTargets('iptables', clusterIP, [ip2], again);
      t.deepEqual(await getPages('iptables', clusterIP, 3), Array(3).fill('hello from web-2'));
      await again.kubectlOk(['delete', 'pod', 'web-2', '--wait=true', '--timeout=60s']);
      t.is((await again.stop()).code, 0);

      const cleanup = await nodeletProxy(undefined, ['--cleanup']);
      t.is(cleanup.code, 0, cleanup.stderr);
      t.deepEqual(await kubeChains(), [], 'no KUBE-* chain left on the host');
    },
  );

  test.serial(
    'nftables: GET http://<ClusterIP>/ from the host returns a pod page; after deleting one pod only the other answers; nodelet proxy --cleanup removes the table',
    async (t) => {
      const up = await startCluster(t, 'nftables', 'proxy-nft');
      await scenario(t, 'nftables', up);
      await up.kubectlOk(['delete', 'pod', 'web-2', '--wait=true', '--timeout=60s']);
      t.is((await up.stop()).code, 0);
      t.not(await nftTable(), '', 'the table outlives nodelet up');
      const cleanup = await nodeletProxy(undefined, ['--cleanup']);
      t.is(cleanup.code, 0, cleanup.stderr);
      t.is(await nftTable(), '', 'table ip kube-proxy is gone');
    },
  );
}
