import test from 'ava';
import { NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { pollUntil } from './test-helpers.js';

/**
 * Three simulated nodes (`nodelet up --nodes 3`, fake runtime) driven with the real kubectl: each node
 * gets its own pod CIDR, pods get unique IPs inside it, and the scheduler honours pod anti-affinity and
 * topology spread constraints with upstream's messages.
 */
const kubectl = requireKubectl(test);

const nodeNames = ['sched-1', 'sched-2', 'sched-3'];

/** A Deployment manifest: `app: name` pods with the given pod spec fields. */
function deployment(name: string, replicas: number, podSpec: object): string {
  const labels = { app: name };
  const template = {
    metadata: { labels },
    spec: { containers: [{ name: 'c', image: 'nginx' }], ...podSpec },
  };
  const spec = { replicas, selector: { matchLabels: labels }, template };
  return JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name }, spec });
}

function ipInCidr(ip: string, cidr: string): boolean {
  const num = (a: string) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
  const [base, bits] = cidr.split('/') as [string, string];
  const size = 2 ** (32 - Number(bits));
  return Math.floor(num(ip) / size) === Math.floor(num(base) / size);
}

if (kubectl) {
  let up: NodeletUp;
  test.before(async () => {
    up = await NodeletUp.start(['--nodes', '3', '--hostname-override', 'sched']);
    for (const n of nodeNames) await up.waitNodeReady(n);
  });
  test.after.always(async () => {
    await up?.stop();
    up?.dispose();
  });

  interface PodRow {
    name: string;
    node: string;
    ip: string;
    phase: string;
  }

  async function podsOf(app: string): Promise<PodRow[]> {
    const list = JSON.parse(await up.kubectlOk(['get', 'pods', '-l', `app=${app}`, '-o', 'json']));
    return list.items
      .filter((p: any) => !p.metadata.deletionTimestamp)
      .map((p: any) => ({
        name: p.metadata.name,
        node: p.spec.nodeName ?? '',
        ip: p.status?.podIP ?? '',
        phase: p.status?.phase ?? '',
      }));
  }

  async function settled(app: string, running: number, pending: number): Promise<PodRow[]> {
    return pollUntil(
      `${running} Running and ${pending} Pending pods of ${app}`,
      async () => {
        const pods = await podsOf(app);
        const r = pods.filter((p) => p.phase === 'Running' && p.ip).length;
        const p = pods.filter((x) => x.phase === 'Pending').length;
        return r === running && p === pending ? pods : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) },
    );
  }

  const perNode = (pods: PodRow[]) =>
    nodeNames.map((n) => pods.filter((p) => p.node === n && p.phase === 'Running').length);

  test.serial(
    'each node has its own /24 of 10.244.0.0/16; 3 replicas land on 3 nodes with distinct IPs inside them',
    async (t) => {
      const out = await up.kubectlOk([
        'get',
        'nodes',
        '-o',
        'jsonpath={range .items[*]}{.metadata.name}={.spec.podCIDR}={.spec.podCIDRs[0]}{"\\n"}{end}',
      ]);
      const cidrs = new Map<string, [string, string]>();
      for (const line of out.trim().split('\n')) {
        const [name, podCidr, first] = line.split('=');
        cidrs.set(name!, [podCidr!, first!]);
      }
      t.deepEqual([...cidrs.keys()].sort(), nodeNames);
      const podCidrs = nodeNames.map((n) => cidrs.get(n)![0]);
      for (const n of nodeNames) t.is(cidrs.get(n)![0], cidrs.get(n)![1], 'spec.podCIDRs holds spec.podCIDR');
      for (const c of podCidrs) t.regex(c, /^10\.244\.\d+\.0\/24$/);
      t.is(new Set(podCidrs).size, 3, `distinct node CIDRs: ${podCidrs.join(' ')}`);

      await up.kubectlOk(['create', 'deployment', 'web', '--image=nginx', '--replicas=3']);
      const pods = await settled('web', 3, 0);
      t.deepEqual(perNode(pods), [1, 1, 1], 'one replica per node');
      t.is(new Set(pods.map((p) => p.ip)).size, 3, `distinct pod IPs: ${pods.map((p) => p.ip).join(' ')}`);
      for (const p of pods)
        t.true(ipInCidr(p.ip, cidrs.get(p.node)![0]), `${p.ip} is in ${p.node}'s ${cidrs.get(p.node)![0]}`);
    },
  );

  test.serial(
    "required pod anti-affinity on kubernetes.io/hostname: 4 replicas → 3 Running, 1 Pending with upstream's message",
    async (t) => {
      const spec = {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'solo' } }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        },
      };
      await up.kubectlOk(['apply', '-f', '-'], deployment('solo', 4, spec));
      const pods = await settled('solo', 3, 1);
      t.deepEqual(perNode(pods), [1, 1, 1]);
      const pending = pods.find((p) => p.phase === 'Pending')!;
      const message = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.";
      const described = await pollUntil(
        'the FailedScheduling event in kubectl describe',
        async () => {
          const d = await up.kubectlOk(['describe', 'pod', pending.name]);
          return d.includes(message) ? d : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      t.regex(
        described,
        /Warning\s+FailedScheduling\s+.*default-scheduler\s+0\/3 nodes are available: 3 node\(s\) didn't match pod anti-affinity rules\./,
      );
      t.regex(described, /PodScheduled\s+False/);
      await up.kubectlOk(['delete', 'deployment', 'solo']);
    },
  );

  test.serial(
    'a topology spread constraint (maxSkew 1 over hostname) spreads 6 replicas 2/2/2 despite a loaded node',
    async (t) => {
      // A pod that takes most of sched-1's CPU: least-allocated scoring alone would avoid sched-1.
      const cpu = (
        await up.kubectlOk(['get', 'node', 'sched-1', '-o', 'jsonpath={.status.allocatable.cpu}'])
      ).trim();
      const ballastMilli = Math.floor(
        (cpu.endsWith('m') ? Number(cpu.slice(0, -1)) : Number(cpu) * 1000) * 0.6,
      );
      await up.kubectlOk(
        ['apply', '-f', '-'],
        deployment('ballast', 1, {
          nodeSelector: { 'kubernetes.io/hostname': 'sched-1' },
          containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: `${ballastMilli}m` } } }],
        }),
      );
      await settled('ballast', 1, 0);
      const spec = {
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: 'kubernetes.io/hostname',
            whenUnsatisfiable: 'DoNotSchedule',
            labelSelector: { matchLabels: { app: 'spread' } },
          },
        ],
      };
      await up.kubectlOk(['apply', '-f', '-'], deployment('spread', 6, spec));
      const pods = await settled('spread', 6, 0);
      t.deepEqual(perNode(pods), [2, 2, 2]);
      t.is(new Set(pods.map((p) => p.ip)).size, 6, 'six distinct pod IPs');
    },
  );
}
