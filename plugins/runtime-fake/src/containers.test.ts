// The fake runtime's container state machine: create, start, stop, remove, restarts.
import test from 'ava';
import { ContainerState } from '@nodelet/cri';
import { createContainer, expectCode as code, ns, runPod, setup, startContainer } from './fixtures.js';

test('containers go CREATED → RUNNING → EXITED (143 on SIGTERM) → removed', async (t) => {
  const { clock, runtime } = setup();
  const pod = await runPod(runtime, 'web');
  await clock.advance(1000);
  const id = await createContainer(runtime, pod, 'app');
  t.regex(id, /^[0-9a-f]{64}$/);

  let s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_CREATED);
  t.is(s.createdAt, ns(1000));
  t.is(s.startedAt, 0n);

  await clock.advance(500);
  await runtime.startContainer({ containerId: id });
  s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_RUNNING);
  t.is(s.startedAt, ns(1500));
  t.is(s.reason, '');

  await clock.advance(500);
  await runtime.stopContainer({ containerId: id, timeout: 30n });
  s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.state, ContainerState.CONTAINER_EXITED);
  t.is(s.exitCode, 143);
  t.is(s.reason, 'Error');
  t.is(s.finishedAt, ns(2000));

  await runtime.removeContainer({ containerId: id });
  const err = await t.throwsAsync(runtime.containerStatus({ containerId: id, verbose: false }));
  code(t, err, 'NotFound');
  t.is(err?.message, `an error occurred when try to find container "${id}": not found`);
});

test('start is refused unless the container is CREATED; unknown ids are NotFound', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'web');
  const id = await startContainer(runtime, pod, 'app');
  code(t, await t.throwsAsync(runtime.startContainer({ containerId: id })), 'FailedPrecondition');
  code(t, await t.throwsAsync(runtime.startContainer({ containerId: 'nope' })), 'NotFound');
  code(
    t,
    await t.throwsAsync(runtime.podSandboxStatus({ podSandboxId: 'nope', verbose: false })),
    'NotFound',
  );
});

test('stop and remove are idempotent, for unknown ids too (the CRI contract)', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'web');
  const id = await startContainer(runtime, pod, 'app');
  await runtime.stopContainer({ containerId: id, timeout: 10n });
  await runtime.stopContainer({ containerId: id, timeout: 10n });
  const s = (await runtime.containerStatus({ containerId: id, verbose: false })).status!;
  t.is(s.exitCode, 143, 'a second stop does not change how it exited');
  await runtime.removeContainer({ containerId: id });
  await t.notThrowsAsync(runtime.removeContainer({ containerId: id }));
  await t.notThrowsAsync(runtime.removeContainer({ containerId: 'never-existed' }));
  await runtime.stopPodSandbox({ podSandboxId: pod });
  await runtime.stopPodSandbox({ podSandboxId: pod });
  await runtime.removePodSandbox({ podSandboxId: pod });
  await t.notThrowsAsync(runtime.removePodSandbox({ podSandboxId: pod }));
  await t.notThrowsAsync(runtime.stopContainer({ containerId: id, timeout: 10n }), 'a removed container');
  await t.notThrowsAsync(runtime.stopContainer({ containerId: 'never-existed', timeout: 1n }));
  await t.notThrowsAsync(runtime.stopPodSandbox({ podSandboxId: pod }), 'a removed sandbox');
  await t.notThrowsAsync(runtime.stopPodSandbox({ podSandboxId: 'f'.repeat(64) }));
  t.deepEqual(runtime.counts(), { sandboxes: 0, containers: 0, running: 0, images: 2, podIPs: 0 });
});

test('a restart is a new container with a new id; the same attempt twice is refused like containerd', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'web');
  const first = await startContainer(runtime, pod, 'app', { attempt: 0 });
  runtime.killContainer(first, 1);
  const dup = await t.throwsAsync(createContainer(runtime, pod, 'app', { attempt: 0 }));
  code(t, dup, 'AlreadyExists');
  t.regex(
    dup!.message,
    /failed to reserve container name "app_web_default_uid-web_0": name ".*" is reserved for "[0-9a-f]{64}"/,
  );
  const second = await startContainer(runtime, pod, 'app', { attempt: 1 });
  t.not(second, first);
  const { containers } = await runtime.listContainers({
    filter: { id: '', podSandboxId: pod, labelSelector: {} },
  });
  t.deepEqual(
    containers.map((c) => [c.metadata?.attempt, c.state]),
    [
      [0, ContainerState.CONTAINER_EXITED],
      [1, ContainerState.CONTAINER_RUNNING],
    ],
  );
  t.true(containers[1]!.createdAt > containers[0]!.createdAt, 'creation order is total even in one instant');
  await runtime.removeContainer({ containerId: first });
  await t.notThrowsAsync(
    createContainer(runtime, pod, 'app', { attempt: 0 }),
    'the name is free once removed',
  );
});
