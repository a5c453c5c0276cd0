/**
 * The conformance suite's container cases: create, start, exit by itself, stop with and without a
 * grace period, remove and list.
 */
import { join } from 'node:path';
import { ContainerFilter, ContainerState } from '../index.js';
import { clock } from './kit.js';
import { REFUSED, image, rejects, sorted, stopOfGoneSucceeds, type It } from './assertions.js';
import { RUN_LABEL } from './kit.js';

export function containerTests(it: It): void {
  it('CreateContainer → CREATED with its config; StartContainer → RUNNING; a second start is refused', async (t, k) => {
    const pod = await k.runPod(t, { name: 'lifecycle' });
    const spec = {
      name: 'app',
      command: ['sleep', '3600'],
      labels: { role: 'web' },
      annotations: { 'example.com/a': '1' },
    };
    const id = await k.createContainer(pod, spec);
    t.regex(id, /^[0-9a-f]{64}$/);
    const created = await k.containerStatus(id);
    t.is(created.id, id);
    t.is(created.state, ContainerState.CONTAINER_CREATED);
    t.deepEqual(created.metadata, { name: 'app', attempt: 0 });
    t.is(created.labels.role, 'web');
    t.is(created.annotations['example.com/a'], '1');
    t.is(created.logPath, join(pod.logDirectory, 'app/0.log'));
    t.is(created.startedAt, 0n);
    const busybox = (
      await k.target.image.imageStatus({ image: image(k.target.busyboxImage), verbose: false })
    ).image;
    t.true(busybox?.repoTags.includes(created.image?.image ?? ''), `image ${created.image?.image}`);
    t.not(created.imageRef, '');

    await k.runtime.startContainer({ containerId: id });
    const running = await k.containerStatus(id);
    t.is(running.state, ContainerState.CONTAINER_RUNNING);
    t.true(running.startedAt >= running.createdAt);
    t.is(running.finishedAt, 0n);
    await rejects(t, k.runtime.startContainer({ containerId: id }), REFUSED, /CONTAINER_RUNNING state/);
  });

  it('CreateContainer refuses an unknown sandbox and an absent image (NotFound), and a stopped sandbox', async (t, k) => {
    const pod = await k.runPod(t, { name: 'refuse' });
    const config = k.containerConfig(pod, { name: 'app', command: ['true'] });
    await rejects(
      t,
      k.runtime.createContainer({ podSandboxId: 'e'.repeat(64), config, sandboxConfig: pod.config }),
      'NotFound',
    );
    const absent = k.containerConfig(pod, { name: 'absent', command: ['true'] });
    absent.image = image(k.target.missingImage);
    await rejects(
      t,
      k.runtime.createContainer({ podSandboxId: pod.id, config: absent, sandboxConfig: pod.config }),
      'NotFound',
      /not found/,
    );
    await k.runtime.stopPodSandbox({ podSandboxId: pod.id });
    await rejects(
      t,
      k.runtime.createContainer({ podSandboxId: pod.id, config, sandboxConfig: pod.config }),
      REFUSED,
    );
  });

  it('a container that exits by itself: exit code, reason Error or Completed, finishedAt', async (t, k) => {
    const pod = await k.runPod(t, { name: 'exits' });
    const failing = await k.startContainer(pod, {
      name: 'fails',
      command: ['sh', '-c', 'exit 3'],
      fake: 'exitAfter=0s,exitCode=3',
    });
    const ok = await k.startContainer(pod, { name: 'ok', command: ['true'], fake: 'exitAfter=0s' });
    const f = await k.waitForState(failing, ContainerState.CONTAINER_EXITED);
    t.is(f.exitCode, 3);
    t.is(f.reason, 'Error');
    // Both are set. containerd stamps startedAt after the start returns, so a process that exits at
    // once can show finishedAt a moment *before* startedAt: consumers must not assume the order.
    t.true(f.startedAt > 0n && f.startedAt >= f.createdAt && f.finishedAt >= f.createdAt);
    const o = await k.waitForState(ok, ContainerState.CONTAINER_EXITED);
    t.is(o.exitCode, 0);
    t.is(o.reason, 'Completed');
  });

  it('StopContainer: a process that handles SIGTERM exits in the grace period with its own code', async (t, k) => {
    const pod = await k.runPod(t, { name: 'term' });
    const id = await k.startContainer(pod, {
      name: 'app',
      command: ['sh', '-c', "trap 'exit 0' TERM; echo ready; while :; do sleep 1 & wait $!; done"],
      fake: 'stdout=ready,stopExitCode=0',
    });
    await k.waitForLog(pod, 'app', 'stdout', 'ready'); // the trap is set
    const started = clock.now();
    await k.runtime.stopContainer({ containerId: id, timeout: 10n });
    t.true(clock.now() - started < 8000, `took ${clock.now() - started} ms`);
    const s = await k.containerStatus(id);
    t.is(s.state, ContainerState.CONTAINER_EXITED);
    t.is(s.exitCode, 0);
    t.is(s.reason, 'Completed');
  });

  it('StopContainer with a timeout: a process ignoring SIGTERM is killed (137) when it ends', async (t, k) => {
    const pod = await k.runPod(t, { name: 'ignore' });
    const id = await k.startContainer(pod, {
      name: 'app',
      command: ['sh', '-c', "trap '' TERM; echo ready; sleep 3600"],
      fake: 'stdout=ready,ignoreStop',
    });
    await k.waitForLog(pod, 'app', 'stdout', 'ready');
    const started = clock.now();
    await k.runtime.stopContainer({ containerId: id, timeout: 2n });
    const took = clock.now() - started;
    t.true(took >= 1800 && took < 10_000, `stop took ${took} ms; the grace period is 2 s`);
    const s = await k.containerStatus(id);
    t.is(s.state, ContainerState.CONTAINER_EXITED);
    t.is(s.exitCode, 137);
    t.is(s.reason, 'Error');
  });

  it('StopContainer: SIGTERM ends a plain process (143), timeout 0 kills (137), an exited one stays', async (t, k) => {
    const pod = await k.runPod(t, { name: 'plain' });
    const plain = await k.startContainer(pod, { name: 'plain', command: ['sleep', '3600'] });
    const killed = await k.startContainer(pod, { name: 'killed', command: ['sleep', '3600'] });
    await k.runtime.stopContainer({ containerId: plain, timeout: 10n });
    t.is((await k.containerStatus(plain)).exitCode, 143);
    await k.runtime.stopContainer({ containerId: killed, timeout: 0n });
    const s = await k.containerStatus(killed);
    t.is(s.state, ContainerState.CONTAINER_EXITED);
    t.is(s.exitCode, 137);
    // Idempotent: stopping an exited container succeeds and changes nothing.
    await k.runtime.stopContainer({ containerId: killed, timeout: 10n });
    t.deepEqual(await k.containerStatus(killed), s);
    // A created container that never ran: stop succeeds.
    const created = await k.createContainer(pod, { name: 'created', command: ['true'] });
    await k.runtime.stopContainer({ containerId: created, timeout: 1n });
  });

  it('RemoveContainer removes a running container and is idempotent; the removed one is NotFound', async (t, k) => {
    const pod = await k.runPod(t, { name: 'rm' });
    const id = await k.startContainer(pod, { name: 'app', command: ['sleep', '3600'] });
    await k.runtime.removeContainer({ containerId: id });
    await k.runtime.removeContainer({ containerId: id });
    await rejects(t, k.containerStatus(id), 'NotFound', /not found/);
    await stopOfGoneSucceeds(t, k.runtime.stopContainer({ containerId: id, timeout: 0n }), 'StopContainer');
    const { containers } = await k.runtime.listContainers({
      filter: ContainerFilter.fromPartial({ podSandboxId: pod.id }),
    });
    t.deepEqual(containers, []);
    await k.runtime.removeContainer({ containerId: 'd'.repeat(64) });
  });

  it('ListContainers filters by id, prefix, sandbox, state and label selector (all must match)', async (t, k) => {
    const pod = await k.runPod(t, { name: 'lc' });
    const other = await k.runPod(t, { name: 'lc-other' });
    const mine = k.selector({ case: 'lc' });
    const running = await k.startContainer(pod, { name: 'run', command: ['sleep', '3600'], labels: mine });
    const created = await k.createContainer(pod, {
      name: 'new',
      command: ['true'],
      labels: { ...mine, role: 'db' },
    });
    const exited = await k.startContainer(pod, {
      name: 'done',
      command: ['true'],
      fake: 'exitAfter=0s',
      labels: mine,
    });
    const elsewhere = await k.startContainer(other, { name: 'x', command: ['sleep', '3600'], labels: mine });
    await k.waitForState(exited, ContainerState.CONTAINER_EXITED);
    const list = async (filter: Partial<ContainerFilter>) =>
      sorted(
        (await k.runtime.listContainers({ filter: ContainerFilter.fromPartial(filter) })).containers.map(
          (c) => c.id,
        ),
      );
    t.deepEqual(await list({ labelSelector: mine }), sorted([running, created, exited, elsewhere]));
    t.deepEqual(await list({ id: running }), [running]);
    t.deepEqual(await list({ id: running.slice(0, 16) }), [running], 'a unique prefix names the container');
    t.deepEqual(await list({ podSandboxId: pod.id }), sorted([running, created, exited]));
    t.deepEqual(await list({ podSandboxId: pod.id.slice(0, 16) }), sorted([running, created, exited]));
    t.deepEqual(
      await list({ state: { state: ContainerState.CONTAINER_RUNNING }, labelSelector: mine }),
      sorted([running, elsewhere]),
    );
    t.deepEqual(await list({ state: { state: ContainerState.CONTAINER_CREATED }, labelSelector: mine }), [
      created,
    ]);
    t.deepEqual(await list({ state: { state: ContainerState.CONTAINER_EXITED }, labelSelector: mine }), [
      exited,
    ]);
    t.deepEqual(await list({ labelSelector: { ...mine, role: 'db' } }), [created]);
    t.deepEqual(await list({ id: running, state: { state: ContainerState.CONTAINER_EXITED } }), []);
    t.deepEqual(await list({ podSandboxId: other.id, labelSelector: { ...mine, role: 'db' } }), []);
    const { containers } = await k.runtime.listContainers({
      filter: ContainerFilter.fromPartial({ id: running }),
    });
    const c = containers[0]!;
    t.is(c.podSandboxId, pod.id);
    t.deepEqual(c.metadata, { name: 'run', attempt: 0 });
    t.is(c.state, ContainerState.CONTAINER_RUNNING);
    t.is(c.labels[RUN_LABEL], k.runId);
    t.not(c.imageRef, '');
  });
}
