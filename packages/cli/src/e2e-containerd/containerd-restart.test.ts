import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { ContainerState, createCriClient, PodSandboxState } from '@nodelet/cri';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import {
  BUSYBOX,
  containerStatus,
  httpGet,
  idOf,
  inPodCidr,
  isRunning,
  KubeletChild,
  manifest,
  NODE_LABEL,
  nodeName,
  Workspace,
} from './helpers.js';
import { PrivateContainerd } from './private-containerd.js';
import { TestControlPlane } from './test-control-plane.js';

/**
 * containerd itself stops while nodelet runs, and starts again. The shared containerd serves other test
 * files, so this one runs a containerd of its own (PrivateContainerd: same settings, its own socket and
 * state, stopped and started by its PID) and points `nodelet kubelet --runtime containerd
 * --container-runtime-endpoint` at it; the kubelet joins an in-process control plane, so the runtime's
 * readiness shows where a user reads it: the Node's Ready condition.
 *
 * While containerd is down: the kubelet stays up; it logs the outage once per backoff step (failures 1,
 * 2, 4, 8, …), not once per relist or call; the Node turns NotReady, "container runtime is down"; the
 * pods keep serving (their shims outlive containerd); /healthz stays ok, since PLEG turns unhealthy only
 * after 3 minutes without a relist (that rule is shown on the virtual clock in
 * packages/kubelet/src/runtime-outage.test.ts). Once containerd is back: relisting resumes, the Node is
 * Ready, the same sandboxes and containers run (restart counts 0: nothing recreated), and a pod added
 * afterwards starts.
 */
const containerd = await requireContainerd(test);

/** How long a pod worker waits to retry a failed sync (pod-workers.ts errorBackoffMs). */
const POD_SYNC_RETRY_MS = 10_000;
/** syncFrequency of this test's kubelet. */
const SYNC_FREQUENCY_MS = 2000;

const httpd = (name: string) =>
  manifest(
    name,
    `  containers:
  - name: web
    image: ${BUSYBOX}
    command: ["httpd", "-f", "-p", "8080", "-h", "/var/www"]
    ports: [{containerPort: 8080}]
`,
  );

const lines = (text: string, re: RegExp) => text.split('\n').filter((l) => re.test(l));
const failuresOf = (l: string) => Number(/ failures=(\d+)/.exec(l)?.[1]);
/** Log lines whose `failures=` are 1, 2, 4, 8, … in order: one line per backoff step. */
const perBackoffStep = (logged: string[]) => logged.every((l, i) => failuresOf(l) === 2 ** i);

if (containerd) {
  test('containerd stops and starts again: nodelet logs per backoff step, reports NotReady, keeps and adopts its pods', async (t) => {
    t.timeout(240_000);
    const node = nodeName('ctrd-restart');
    // Pods resync every 2 s (upstream: 1 min), so their workers meet the outage and the restarted
    // containerd within the test, not only PLEG and housekeeping.
    const ws = new Workspace('  kubeletConfig: ./kubelet-config.yaml\n');
    writeFileSync(
      join(ws.dir, 'kubelet-config.yaml'),
      `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsyncFrequency: ${SYNC_FREQUENCY_MS / 1000}s\n`,
    );
    // Teardowns run in reverse order: the kubelet, the private containerd (its pods removed through CRI
    // first), the control plane, the directories.
    t.teardown(() => ws.dispose());
    const cp = await TestControlPlane.start();
    t.teardown(() => cp.stop());
    const ctrd = await PrivateContainerd.create();
    t.teardown(() => ctrd.dispose());
    const kubeconfig = await cp.nodeKubeconfig(node);
    const { core } = cp;
    const ready = async () => {
      const n = await core.readNode({ name: node }).catch(() => undefined);
      return n?.status?.conditions?.find((c) => c.type === 'Ready');
    };

    const kubelet = await KubeletChild.start(ws, node, [
      '--container-runtime-endpoint',
      ctrd.endpoint,
      '--kubeconfig',
      kubeconfig,
    ]);
    t.teardown(() => kubelet.stop().then(() => undefined));
    const names = ['web-a', 'web-b'].map((n) => `${n}-${node}`);
    ws.write('web-a.yaml', httpd('web-a'));
    ws.write('web-b.yaml', httpd('web-b'));
    const pods = await Promise.all(
      names.map((n) => kubelet.waitPod(n, 'Running', (p) => isRunning(p, 'web'))),
    );
    const podIPs = pods.map((p) => p.status!.podIP!);
    t.true(podIPs.every(inPodCidr), `pod IPs ${podIPs.join(' ')} are on the CNI bridge`);
    const containerIds = pods.map((p) => idOf(containerStatus(p, 'web')?.containerID));
    for (const ip of podIPs) {
      const page = await pollUntil(`GET http://${ip}:8080/`, () => httpGet(ip, 8080).catch(() => undefined), {
        timeoutMs: 10_000,
        intervalMs: 200,
      });
      t.deepEqual(page, { status: 200, body: 'hello from nodelet\n' });
    }
    await pollUntil(
      'the Node to be Ready',
      async () => ((await ready())?.status === 'True' ? true : undefined),
      {
        timeoutMs: 30_000,
        intervalMs: 200,
        describe: () => kubelet.stderr().slice(-3000),
      },
    );
    const before = await criState(ctrd.endpoint, node);
    t.deepEqual(
      before.sandboxes.map((s) => s.state),
      [PodSandboxState.SANDBOX_READY, PodSandboxState.SANDBOX_READY],
    );
    t.deepEqual(
      before.containers.map((c) => [c.id, c.state, c.restartCount]),
      [...containerIds].sort().map((id) => [id, ContainerState.CONTAINER_RUNNING, '0']),
    );

    // containerd stops (SIGTERM to the PID this test started); its shims keep the pods running.
    const mark = kubelet.stderr().length;
    const down = Date.now();
    await ctrd.stop();
    const notReady = await pollUntil(
      'the Node to be NotReady',
      async () => {
        const c = await ready();
        return c?.status === 'False' ? c : undefined;
      },
      { timeoutMs: 40_000, intervalMs: 250, describe: () => kubelet.stderr().slice(mark) },
    );
    const notReadyAfter = Date.now() - down;
    t.is(notReady.reason, 'KubeletNotReady');
    t.true(
      notReady.message?.startsWith(
        `container runtime is down: cannot connect to the container runtime at ${ctrd.endpoint}`,
      ),
      notReady.message,
    );
    await pollUntil(
      'the 8th failed relist to be logged',
      async () =>
        lines(kubelet.stderr().slice(mark), /PLEG relist failed/).some((l) => failuresOf(l) === 8)
          ? true
          : undefined,
      { timeoutMs: 30_000, intervalMs: 250, describe: () => kubelet.stderr().slice(mark) },
    );
    t.true(kubelet.running, 'the kubelet is still up');
    t.deepEqual(await httpGet('127.0.0.1', kubelet.port, '/healthz'), { status: 200, body: 'ok' });
    for (const ip of podIPs) {
      t.deepEqual(await httpGet(ip, 8080), { status: 200, body: 'hello from nodelet\n' }, `${ip} serves`);
    }

    // containerd starts again on the same state. What the kubelet logged until it answers is the outage.
    await ctrd.start();
    const up = Date.now();
    const outage = kubelet.stderr().slice(mark);
    const seconds = (up - down) / 1000;
    await pollUntil(
      'relisting to resume',
      async () => (/PLEG relist succeeded again/.test(kubelet.stderr().slice(mark)) ? true : undefined),
      { timeoutMs: 30_000, intervalMs: 100, describe: () => kubelet.stderr().slice(mark) },
    );
    const relistAfter = Date.now() - up;
    await pollUntil(
      'the Node to be Ready again',
      async () => ((await ready())?.status === 'True' ? true : undefined),
      {
        timeoutMs: 30_000,
        intervalMs: 250,
        describe: () => kubelet.stderr().slice(mark),
      },
    );
    const readyAfter = Date.now() - up;

    // The outage, as logged: each reporter (PLEG, housekeeping, each pod's worker) at its 1st, 2nd, 4th,
    // 8th, … failure in a row, and nobody else.
    const pleg = lines(outage, /PLEG relist failed/);
    const housekeeping = lines(outage, /housekeeping failed/);
    const syncs = lines(outage, /error syncing pod/);
    // The eviction manager reads the runtime's stats every 10 s: it may fail once or twice in the outage.
    const eviction = lines(outage, /Eviction manager: failed to synchronize/);
    t.true(perBackoffStep(eviction), `eviction manager:\n${eviction.join('\n')}`);
    t.true(
      pleg[0]?.includes(`cannot connect to the container runtime at ${ctrd.endpoint}: connect ENOENT`),
      pleg[0],
    );
    t.true(pleg.length >= 4 && perBackoffStep(pleg), `PLEG:\n${pleg.join('\n')}`);
    t.true(
      housekeeping.length > 0 && perBackoffStep(housekeeping),
      `housekeeping:\n${housekeeping.join('\n')}`,
    );
    for (const name of names) {
      const mine = syncs.filter((l) => l.includes(`pod="default/${name}"`));
      t.true(perBackoffStep(mine), `${name}:\n${mine.join('\n')}`);
    }
    const complaints = lines(outage, /^[EW]\d{4} /);
    t.deepEqual(
      complaints.filter(
        (l) => !pleg.includes(l) && !housekeeping.includes(l) && !syncs.includes(l) && !eviction.includes(l),
      ),
      [],
      'nothing else complains',
    );
    const failedRelists = Number(
      /PLEG relist succeeded again failedRelists=(\d+)/.exec(kubelet.stderr())?.[1],
    );
    t.true(failedRelists >= 8, `${failedRelists} relists failed`);
    t.log(
      `outage ${seconds.toFixed(1)} s: ${failedRelists} failed relists, ${complaints.length} warning/error lines ` +
        `(${pleg.length} PLEG, ${housekeeping.length} housekeeping, ${syncs.length} pod sync)`,
    );
    t.log(
      `Node NotReady ${notReadyAfter} ms after SIGTERM; relisting ${relistAfter} ms and Ready ${readyAfter} ms after containerd started again`,
    );

    // A pod added after the outage starts; by the time the old pods' workers have retried their failed
    // syncs against the restarted containerd, nothing of theirs was recreated.
    ws.write('web-c.yaml', httpd('web-c'));
    const c = await kubelet.waitPod(`web-c-${node}`, 'Running', (p) => isRunning(p, 'web'));
    t.true(inPodCidr(c.status?.podIP));
    const page = await pollUntil(
      `GET http://${c.status?.podIP}:8080/`,
      () => httpGet(c.status!.podIP!, 8080).catch(() => undefined),
      { timeoutMs: 10_000, intervalMs: 200 },
    );
    t.is(page.body, 'hello from nodelet\n');
    // Each old pod's worker retries its failed sync at most POD_SYNC_RETRY_MS after the failure and then
    // resyncs every SYNC_FREQUENCY_MS: by the end of this window both pods were synced against the
    // restarted containerd. containerd is watched across it, so a container recreated (or a sandbox
    // replaced) even for a moment shows.
    const windowEnd = up + POD_SYNC_RETRY_MS + 2 * SYNC_FREQUENCY_MS;
    let watched = 0;
    do {
      const now = await criState(ctrd.endpoint, node);
      const old = {
        sandboxes: now.sandboxes.filter((s) => before.sandboxes.some((b) => b.id === s.id)),
        containers: now.containers.filter((s) => containerIds.includes(s.id)),
      };
      if (JSON.stringify(old) !== JSON.stringify(before) || now.containers.length !== 3) {
        t.fail(`containerd changed ${Date.now() - up} ms after its restart: ${JSON.stringify(now)}`);
        break;
      }
      watched++;
      await new Promise((r) => setTimeout(r, 500));
    } while (Date.now() < windowEnd);
    t.log(`containerd watched ${watched} times until ${windowEnd - up} ms after its restart`);
    t.deepEqual(
      lines(kubelet.stderr().slice(mark + outage.length), /^[EW]\d{4} /),
      [],
      'no warnings or errors once containerd is back',
    );
    const after = await criState(ctrd.endpoint, node);
    t.deepEqual(
      after.sandboxes.filter((s) => before.sandboxes.some((b) => b.id === s.id)),
      before.sandboxes,
      'the same sandboxes, still ready',
    );
    t.deepEqual(
      after.containers.filter((s) => containerIds.includes(s.id)),
      before.containers,
      'the same containers, still running',
    );
    t.is(after.sandboxes.length, 3);
    t.is(after.containers.length, 3, 'no container created besides web-c');
    for (const [i, name] of names.entries()) {
      const pod = await kubelet.pod(name);
      const status = containerStatus(pod!, 'web');
      t.is(idOf(status?.containerID), containerIds[i], `${name}: the same container`);
      t.is(status?.restartCount, 0, `${name}: RESTARTS 0`);
      t.is(pod?.status?.podIP, podIPs[i]);
      t.deepEqual(await httpGet(podIPs[i]!, 8080), { status: 200, body: 'hello from nodelet\n' });
    }
    t.notRegex(kubelet.stderr().slice(mark), /Killing|Terminating pod|Cleaning up orphaned/);
    t.true(kubelet.running);
    t.deepEqual(await kubelet.stop(), { code: 0, signal: null });
  });
}

/** This node's sandboxes and containers in containerd, through CRI: id, state, restart count. */
async function criState(endpoint: string, node: string) {
  const client = createCriClient(endpoint, { timeoutMs: 30_000 });
  try {
    const selector = { [NODE_LABEL]: node };
    const [sandboxes, containers] = await Promise.all([
      client.runtime.listPodSandbox({ filter: { id: '', labelSelector: selector } }),
      client.runtime.listContainers({ filter: { id: '', podSandboxId: '', labelSelector: selector } }),
    ]);
    const byId = <T extends { id: string }>(a: T, b: T) => a.id.localeCompare(b.id);
    return {
      sandboxes: sandboxes.items.map((s) => ({ id: s.id, state: s.state })).sort(byId),
      containers: containers.containers
        .map((c) => ({
          id: c.id,
          state: c.state,
          restartCount: c.annotations['io.kubernetes.container.restartCount'],
        }))
        .sort(byId),
    };
  } finally {
    client.close();
  }
}
