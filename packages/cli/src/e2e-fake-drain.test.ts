import { spawn } from 'node:child_process';
import { join } from 'node:path';
import test from 'ava';
import { systemEnv } from '@nodelet/proxy';
import { kubectlPath, NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { TestChild } from './e2e-containerd/test-child.js';
import { pollUntil } from './test-helpers.js';

/**
 * Node maintenance as an operator does it on `nodelet up --nodes 3` (fake runtime) with the real kubectl:
 * cordon and uncordon; a drain held by a PodDisruptionBudget until the Deployment has a spare Ready replica
 * elsewhere; drains with default flags and without eviction; a foreground cascading delete.
 */
const kubectl = requireKubectl(test);

if (kubectl) {
  let up: NodeletUp;
  const nodes = ['dr-1', 'dr-2', 'dr-3'];
  test.before(async () => {
    up = await NodeletUp.start(['--nodes', '3', '--hostname-override', 'dr']);
    for (const n of nodes) await up.waitNodeReady(n);
  });
  test.after.always(async () => {
    await up?.stop();
    up?.dispose();
  });

  /** The web pods not being deleted: name → node, with phase and readiness. */
  async function webPods(): Promise<{ name: string; node: string; ready: boolean }[]> {
    const list = JSON.parse(await up.kubectlOk(['get', 'pods', '-l', 'app=web', '-o', 'json']));
    return list.items
      .filter((p: any) => !p.metadata.deletionTimestamp)
      .map((p: any) => ({
        name: p.metadata.name,
        node: p.spec.nodeName ?? '',
        ready:
          p.status?.phase === 'Running' &&
          (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'),
      }));
  }

  const readyPods = (n: number, what: string) =>
    pollUntil(
      what,
      async () => {
        const pods = await webPods();
        return pods.length === n && pods.every((p) => p.ready) ? pods : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) },
    );

  const nodeRow = async (node: string) => (await up.kubectlOk(['get', 'node', node, '--no-headers'])).trim();

  test.serial('kubectl cordon / uncordon: SchedulingDisabled, spec.unschedulable, and back', async (t) => {
    t.regex(await up.kubectlOk(['cordon', 'dr-3']), /node\/dr-3 cordoned/);
    t.regex(await nodeRow('dr-3'), /^dr-3\s+Ready,SchedulingDisabled\s/);
    t.is(await up.kubectlOk(['get', 'node', 'dr-3', '-o', 'jsonpath={.spec.unschedulable}']), 'true');
    t.regex(await up.kubectlOk(['uncordon', 'dr-3']), /node\/dr-3 uncordoned/);
    t.regex(await nodeRow('dr-3'), /^dr-3\s+Ready\s/);
  });

  let drained = '';

  test.serial(
    'kubectl drain waits on a PDB minAvailable 2 until a third replica is Ready elsewhere',
    async (t) => {
      await up.kubectlOk(['create', 'deployment', 'web', '--image=nginx', '--replicas=2']);
      const [victim] = await readyPods(2, 'two Ready web pods');
      drained = victim!.node;
      t.regex(
        await up.kubectlOk(['create', 'pdb', 'web', '--selector=app=web', '--min-available=2']),
        /poddisruptionbudget.policy\/web created/,
      );
      await pollUntil(
        'the PDB to count two healthy pods',
        async () => {
          const row = (await up.kubectlOk(['get', 'pdb', 'web', '--no-headers'])).trim();
          return /^web\s+2\s+N\/A\s+0\s/.test(row) ? row : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );

      // The drain runs in the background: blocked, it keeps retrying and saying why.
      let out = '';
      const child = spawn(
        kubectlPath,
        [
          ...['--kubeconfig', up.kubeconfig, '--cache-dir', join(up.dataDir, 'kubectl-cache')],
          ...['drain', drained, '--ignore-daemonsets', '--timeout=120s'],
        ],
        { stdio: ['ignore', 'pipe', 'pipe'], env: systemEnv() },
      );
      const drain = new TestChild(child);
      t.teardown(() => drain.stop(5_000));
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      await pollUntil(
        'the eviction refused by the budget',
        async () =>
          /error when evicting pods\/"web-[^"]+" -n "default" \(will retry after 5s\): Cannot evict pod as it would violate the pod's disruption budget\./.test(
            out,
          )
            ? true
            : undefined,
        { timeoutMs: 60_000, intervalMs: 250, describe: () => out },
      );
      t.false(drain.exited);
      t.regex(await nodeRow(drained), /SchedulingDisabled/, 'cordoned first');
      t.true(
        (await webPods()).some((p) => p.name === victim!.name),
        'the pod is still there',
      );

      await up.kubectlOk(['scale', 'deployment', 'web', '--replicas=3']);
      const exit = await pollUntil(
        'the drain to finish',
        async () => (drain.exited ? drain.exit : undefined),
        {
          timeoutMs: 90_000,
          intervalMs: 250,
          describe: () => out,
        },
      );
      t.is(exit.code, 0, out);
      t.regex(out, new RegExp(`pod/${victim!.name} evicted`));
      t.regex(out, new RegExp(`node/${drained} drained`));
      const after = await readyPods(3, 'three Ready web pods again');
      t.false(
        after.some((p) => p.node === drained),
        'nothing left on the drained node',
      );
      t.regex(await nodeRow(drained), /^\S+\s+Ready,SchedulingDisabled\s/);
    },
  );

  test.serial(
    'kubectl drain with default flags, then with --disable-eviction (a protobuf DeleteOptions)',
    async (t) => {
      await up.kubectlOk(['delete', 'pdb', 'web']);
      await up.kubectlOk(['uncordon', drained]);
      for (const [node, flags] of [
        [nodes.find((n) => n !== drained)!, []],
        [nodes.filter((n) => n !== drained)[1]!, ['--disable-eviction']],
      ] as const) {
        const r = await up.kubectl(['drain', node, '--timeout=60s', ...flags]);
        t.is(r.code, 0, r.stderr);
        t.regex(r.stdout, new RegExp(`node/${node} drained`));
        const pods = await readyPods(3, `three Ready web pods after draining ${node}`);
        t.false(
          pods.some((p) => p.node === node),
          `nothing left on ${node}`,
        );
      }
      for (const n of nodes) await up.kubectlOk(['uncordon', n]);
    },
  );

  test.serial(
    'kubectl delete deployment --cascade=foreground: returns once its ReplicaSet and pods are gone',
    async (t) => {
      const r = await up.kubectl(['delete', 'deployment', 'web', '--cascade=foreground', '--timeout=60s']);
      t.is(r.code, 0, r.stderr);
      t.regex(r.stdout, /deployment.apps "web" deleted/);
      // The Deployment goes last: by the time kubectl saw it gone, its dependents were already removed.
      t.is((await up.kubectlOk(['get', 'rs,pods', '-l', 'app=web', '-o', 'name'])).trim(), '');
    },
  );
}
