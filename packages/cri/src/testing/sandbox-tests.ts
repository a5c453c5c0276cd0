/**
 * The conformance suite's Version, Status and pod sandbox cases: what the kubelet reads of the runtime
 * and how sandboxes are run, stopped, removed and listed.
 */
import { ContainerState, PodSandboxFilter, PodSandboxState } from '../index.js';
import { IPV4, nowNanos, rejects, sorted, stopOfGoneSucceeds, type It } from './assertions.js';
import { RUN_LABEL } from './kit.js';

export function sandboxTests(it: It): void {
  it('Version answers CRI v1 with a runtime name and version', async (t, k) => {
    const v = await k.runtime.version({ version: '0.1.0' });
    t.is(v.runtimeApiVersion, 'v1');
    t.not(v.runtimeName, '');
    t.not(v.runtimeVersion, '');
  });

  it('Status reports RuntimeReady and NetworkReady', async (t, k) => {
    const { status } = await k.runtime.status({ verbose: false });
    const condition = (type: string) => status?.conditions.find((c) => c.type === type)?.status;
    t.true(condition('RuntimeReady'));
    t.true(condition('NetworkReady'));
  });

  // Sandboxes

  it('RunPodSandbox: READY with a pod IP, metadata, labels and annotations; its name is reserved', async (t, k) => {
    const before = nowNanos();
    const pod = await k.runPod(t, { name: 'web', labels: { tier: 'front' }, annotations: { note: 'n1' } });
    const { status } = await k.runtime.podSandboxStatus({ podSandboxId: pod.id, verbose: false });
    t.is(status?.id, pod.id);
    t.regex(pod.id, /^[0-9a-f]{64}$/);
    t.deepEqual(status?.metadata, pod.config.metadata);
    t.is(status?.state, PodSandboxState.SANDBOX_READY);
    t.regex(status?.network?.ip ?? '', IPV4);
    t.true(status!.createdAt >= before - 1_000_000_000n && status!.createdAt <= nowNanos());
    t.is(status?.labels.tier, 'front');
    t.is(status?.labels[RUN_LABEL], k.runId);
    t.is(status?.annotations.note, 'n1');
    // The same metadata again (same attempt) is refused while the first exists.
    await rejects(
      t,
      k.runtime.runPodSandbox({ config: pod.config, runtimeHandler: '' }),
      ['AlreadyExists', 'Internal'],
      /failed to reserve sandbox name .* is reserved for "[0-9a-f]{64}"/,
    );
  });

  it('a host-network sandbox has no pod IP', async (t, k) => {
    const pod = await k.runPod(t, { name: 'host', hostNetwork: true });
    const { status } = await k.runtime.podSandboxStatus({ podSandboxId: pod.id, verbose: false });
    t.is(status?.state, PodSandboxState.SANDBOX_READY);
    t.is(status?.network?.ip ?? '', '');
  });

  it('StopPodSandbox: NOTREADY, its containers exited, its IP gone; stopping again succeeds', async (t, k) => {
    const pod = await k.runPod(t, { name: 'stop' });
    const app = await k.startContainer(pod, { name: 'app', command: ['sleep', '3600'] });
    await k.runtime.stopPodSandbox({ podSandboxId: pod.id });
    const { status } = await k.runtime.podSandboxStatus({ podSandboxId: pod.id, verbose: false });
    t.is(status?.state, PodSandboxState.SANDBOX_NOTREADY);
    t.is(status?.network?.ip ?? '', '', 'the network is torn down with the sandbox');
    t.is((await k.containerStatus(app)).state, ContainerState.CONTAINER_EXITED);
    await k.runtime.stopPodSandbox({ podSandboxId: pod.id });
    t.pass('stopping a stopped sandbox succeeds');
  });

  it('RemovePodSandbox removes it and its containers; again succeeds; status of what is gone is NotFound', async (t, k) => {
    const pod = await k.runPod(t, { name: 'gone' });
    const app = await k.startContainer(pod, { name: 'app', command: ['sleep', '3600'] });
    await k.runtime.stopPodSandbox({ podSandboxId: pod.id });
    await k.runtime.removePodSandbox({ podSandboxId: pod.id });
    await k.runtime.removePodSandbox({ podSandboxId: pod.id });
    await rejects(t, k.runtime.podSandboxStatus({ podSandboxId: pod.id, verbose: false }), 'NotFound');
    await stopOfGoneSucceeds(t, k.runtime.stopPodSandbox({ podSandboxId: pod.id }), 'StopPodSandbox');
    await rejects(t, k.containerStatus(app), 'NotFound');
    const { items } = await k.runtime.listPodSandbox({
      filter: PodSandboxFilter.fromPartial({ id: pod.id }),
    });
    t.deepEqual(items, []);
    // Idempotent removal of what never existed, too.
    await k.runtime.removePodSandbox({ podSandboxId: 'f'.repeat(64) });
  });

  it('RemovePodSandbox of a READY sandbox stops it first', async (t, k) => {
    const pod = await k.runPod(t, { name: 'ready-rm' });
    await k.startContainer(pod, { name: 'app', command: ['sleep', '3600'] });
    await k.runtime.removePodSandbox({ podSandboxId: pod.id });
    await rejects(t, k.runtime.podSandboxStatus({ podSandboxId: pod.id, verbose: false }), 'NotFound');
  });

  it('ListPodSandbox filters by id, unique id prefix, state and label selector (all must match)', async (t, k) => {
    const a = await k.runPod(t, { name: 'list-a', labels: { case: 'list', tier: 'a' } });
    const b = await k.runPod(t, { name: 'list-b', labels: { case: 'list', tier: 'b' } });
    await k.runtime.stopPodSandbox({ podSandboxId: b.id });
    const list = async (filter: Partial<PodSandboxFilter>) =>
      sorted(
        (await k.runtime.listPodSandbox({ filter: PodSandboxFilter.fromPartial(filter) })).items.map(
          (s) => s.id,
        ),
      );
    const mine = k.selector({ case: 'list' });
    t.deepEqual(await list({ labelSelector: mine }), sorted([a.id, b.id]));
    t.deepEqual(await list({ id: a.id }), [a.id]);
    t.deepEqual(await list({ id: a.id.slice(0, 16) }), [a.id], 'a unique prefix names the sandbox');
    t.deepEqual(await list({ state: { state: PodSandboxState.SANDBOX_READY }, labelSelector: mine }), [a.id]);
    t.deepEqual(await list({ state: { state: PodSandboxState.SANDBOX_NOTREADY }, labelSelector: mine }), [
      b.id,
    ]);
    t.deepEqual(await list({ labelSelector: { ...mine, tier: 'b' } }), [b.id]);
    t.deepEqual(await list({ labelSelector: { ...mine, tier: 'c' } }), []);
    t.deepEqual(await list({ id: a.id, state: { state: PodSandboxState.SANDBOX_NOTREADY } }), []);
    const { items } = await k.runtime.listPodSandbox({ filter: PodSandboxFilter.fromPartial({ id: a.id }) });
    t.deepEqual(items[0]?.metadata, a.config.metadata);
    t.is(items[0]?.labels.tier, 'a');
    t.is(items[0]?.state, PodSandboxState.SANDBOX_READY);
  });
}
