import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import {
  BUSYBOX,
  containerStatus,
  ctrContainers,
  ctrTaskPids,
  httpGet,
  idOf,
  idsOf,
  inPodCidr,
  ipamFilesOf,
  isRunning,
  KubeletChild,
  manifest,
  nodeName,
  sandboxesOf,
  sweepNode,
  Workspace,
} from './helpers.js';

/**
 * The kubelet on real containerd, through the CLI as a user runs it: a static busybox httpd pod gets a
 * CNI address and serves the page to the host; `nodelet logs` prints what it echoed; a container killed
 * from outside is restarted with RESTARTS 1; a restarted nodelet adopts the pod without recreating
 * anything; deleting the manifest leaves nothing in containerd or the IPAM store.
 *
 * The tests run in order on one pod (each step starts from the state the previous one left).
 */
const containerd = await requireContainerd(test);

if (containerd) {
  const node = nodeName('life');
  const pod = `web-${node}`;
  const ws = new Workspace();
  let k: KubeletChild | undefined;
  const seen: { podIP?: string; sandboxId?: string; containerIds: string[] } = { containerIds: [] };

  test.after.always(async () => {
    await k?.stop();
    await sweepNode(containerd.endpoint, node);
    await ws.dispose();
  });

  // `$RANDOM$RANDOM` tells the instances apart in the logs.
  const web = manifest(
    'web',
    `  containers:
  - name: web
    image: ${BUSYBOX}
    command: ["sh", "-c", "echo \\"serving /var/www instance $RANDOM$RANDOM\\"; exec httpd -f -p 8080 -h /var/www"]
    ports: [{containerPort: 8080}]
`,
  );

  test.serial(
    'a static httpd pod runs on containerd: a CNI pod IP, the page over HTTP, its echo in nodelet logs',
    async (t) => {
      k = await KubeletChild.start(ws, node);
      const written = Date.now();
      ws.write('web.yaml', web);
      const running = await k.waitPod(
        pod,
        'Running',
        (p) => p.status?.phase === 'Running' && isRunning(p, 'web'),
      );
      t.log(`Running ${Date.now() - written} ms after the manifest was written`);

      const podIP = running.status?.podIP;
      t.true(inPodCidr(podIP), `pod IP ${podIP} is in 10.88.0.0/16`);
      const [row] = (await k.rows('-o', 'wide')).filter((r) => r.NAME === pod);
      t.like(row, { READY: '1/1', STATUS: 'Running', RESTARTS: '0', IP: podIP, NODE: node });

      const page = await pollUntil(
        `GET http://${podIP}:8080/`,
        () => httpGet(podIP!, 8080).catch(() => undefined),
        { timeoutMs: 10_000, intervalMs: 200 },
      );
      t.deepEqual(page, { status: 200, body: 'hello from nodelet\n' });

      const logs = await pollUntil(
        'nodelet logs to print the echo',
        async () => {
          const r = await k!.logs(pod);
          return r.code === 0 && r.stdout !== '' ? r : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 200 },
      );
      t.regex(logs.stdout, /^serving \/var\/www instance \d+\n$/);
      t.is(logs.stderr, '', 'one container: no "Defaulted container" note');
      const withC = await k.logs(pod, '-c', 'web');
      t.is(withC.stdout, logs.stdout);
      const previous = await k.logs(pod, '--previous');
      t.is(previous.code, 1);
      t.is(
        previous.stderr,
        `Error from server (BadRequest): previous terminated container "web" in pod "${pod}" not found\n`,
      );

      const sandboxes = await sandboxesOf(containerd.endpoint, node);
      t.is(sandboxes.length, 1);
      seen.podIP = podIP;
      seen.sandboxId = sandboxes[0];
      seen.containerIds = [idOf(containerStatus(running, 'web')?.containerID)];
      t.deepEqual(ipamFilesOf(seen.sandboxId!), [podIP!], 'host-local holds the pod IP for the sandbox');
    },
  );

  test.serial(
    'a container killed from outside: PLEG sees it die, it runs again with RESTARTS 1',
    async (t) => {
      if (!k || !seen.podIP) return t.fail('needs the pod of the previous test');
      const [first] = seen.containerIds;
      const pid = (await ctrTaskPids()).get(first!);
      t.truthy(pid, `ctr task ls shows container ${first}`);
      const logsBefore = (await k.logs(pod)).stdout;
      process.kill(pid!, 'SIGKILL'); // the container's httpd: a process this test's pod created

      const restarted = await k.waitPod(
        pod,
        'running again with restartCount 1',
        (p) => isRunning(p, 'web') && containerStatus(p, 'web')?.restartCount === 1,
      );
      const status = containerStatus(restarted, 'web')!;
      const second = idOf(status.containerID);
      t.not(second, first, 'a new container');
      t.like(status.lastState?.terminated, {
        exitCode: 137,
        reason: 'Error',
        containerID: `containerd://${first}`,
      });
      t.regex((await k.rows()).find((r) => r.NAME === pod)!.RESTARTS!, /^1 \(\d+s ago\)$/);
      t.is(restarted.status?.podIP, seen.podIP, 'the sandbox (and its IP) is kept');

      const page = await pollUntil(
        'the page again',
        () => httpGet(seen.podIP!, 8080).catch(() => undefined),
        {
          timeoutMs: 10_000,
          intervalMs: 200,
        },
      );
      t.is(page.body, 'hello from nodelet\n');

      // The first instance's log is --previous now; the new one wrote its own line to 1.log.
      const now = await pollUntil(
        'the new instance to log',
        async () => {
          const r = await k!.logs(pod);
          return r.stdout ? r.stdout : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 200 },
      );
      t.regex(now, /^serving \/var\/www instance \d+\n$/);
      t.is((await k.logs(pod, '-p')).stdout, logsBefore);
      seen.containerIds.push(second);
    },
  );

  test.serial('a restarted nodelet adopts the running pod: same container, RESTARTS unchanged', async (t) => {
    if (!k || seen.containerIds.length !== 2) return t.fail('needs the pod of the previous tests');
    const before = await idsOf(containerd.endpoint, node);
    t.is(before.size, 3, 'sandbox, the killed container, the running one');
    const listed = await ctrContainers();
    t.true(
      [...before].every((id) => listed.has(id)),
      'ctr lists them too',
    );
    t.deepEqual(await k.stop(), { code: 0, signal: null }, 'SIGTERM: exits 0, pods keep running');
    t.true((await ctrTaskPids()).has(seen.containerIds[1]!), 'the container outlives the kubelet');

    k = await KubeletChild.start(ws, node);
    const adopted = await k.waitPod(pod, 'Running', (p) => isRunning(p, 'web'));
    const status = containerStatus(adopted, 'web')!;
    t.is(idOf(status.containerID), seen.containerIds[1]);
    t.is(status.restartCount, 1);
    // A few relists (1 s each) and syncs later, containerd holds the same containers.
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      t.deepEqual(
        [...(await idsOf(containerd.endpoint, node))].sort(),
        [...before].sort(),
        'nothing created or removed',
      );
      await new Promise((r) => setTimeout(r, 500));
    }
    t.is(containerStatus((await k.pod(pod))!, 'web')?.restartCount, 1);
    t.notRegex(k.stderr(), /Killing|CreateContainer|Started container/);
  });

  test.serial('deleting the manifest removes sandbox, containers, the pod IP and its logs', async (t) => {
    if (!k || !seen.sandboxId) return t.fail('needs the pod of the previous tests');
    const ours = [seen.sandboxId, ...seen.containerIds];
    ws.remove('web.yaml');
    await pollUntil(
      'the pod to be gone from nodelet and containerd',
      async () => {
        const rows = await k!.rows();
        const left = await ctrContainers();
        return rows.length === 0 && ours.every((id) => !left.has(id)) ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => k!.stderr().slice(-2000) },
    );
    t.deepEqual(await sandboxesOf(containerd.endpoint, node), []);
    t.deepEqual(ipamFilesOf(seen.sandboxId), [], 'host-local released the IP');
    t.false(
      existsSync(join(ws.root, 'pods')) && readdirSync(join(ws.root, 'pods')).length > 0,
      'no pod directory',
    );
    t.deepEqual(existsSync(ws.podLogs) ? readdirSync(ws.podLogs) : [], [], 'no pod log directory');
    const gone = await k.logs(pod);
    t.is(gone.stderr, `Error from server (NotFound): pods "${pod}" not found\n`);
    t.deepEqual(await k.stop(), { code: 0, signal: null });
  });
}
