import test from 'ava';
import type { Pod } from '@nodelet/api';
import { NamespaceMode } from '@nodelet/cri';
import { BEHAVIOR_ANNOTATION_PREFIX as B } from '@nodelet/runtime-fake';
import { type Harness, makePod, startHarness } from './test-harness.js';

/**
 * Ephemeral containers (`kubectl debug`), on the fake runtime under virtual time: added to a running
 * pod's spec, started once in its sandbox — in the target container's process namespace when one is
 * named — shown in `ephemeralContainerStatuses`, never restarted, never killed as "not in the spec".
 */

function recordCreates(h: Harness) {
  const creates: Parameters<Harness['runtime']['createContainer']>[0][] = [];
  const create = h.runtime.createContainer.bind(h.runtime);
  h.runtime.createContainer = async (req) => (creates.push(req), create(req));
  return creates;
}

const debugged = (annotations: Record<string, string> = {}): Pod => {
  const pod = makePod('web', {}, annotations);
  pod.spec!.ephemeralContainers = [
    {
      name: 'debugger',
      image: 'busybox:1.36',
      imagePullPolicy: 'IfNotPresent',
      targetContainerName: 'main',
      stdin: true,
      tty: true,
    },
  ];
  return pod;
};

test('an ephemeral container added to a running pod starts in its sandbox, in the target’s PID namespace', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const creates = recordCreates(h);
  h.source.set([makePod('web', {})]);
  await h.clock.advance(2_000);
  const mainId = h.status('uid-web').containerStatuses![0]!.containerID!.replace(/^.*:\/\//, '');
  h.source.set([debugged()]);
  await h.clock.advance(2_000);
  const req = creates.find((c) => c.config?.metadata?.name === 'debugger');
  t.truthy(req, 'CreateContainer for the debugger');
  t.is(req!.podSandboxId, creates[0]!.podSandboxId, 'in the pod’s sandbox');
  t.like(req!.config!.linux!.securityContext!.namespaceOptions, {
    pid: NamespaceMode.TARGET,
    targetId: mainId,
  });
  t.like(req!.config, { stdin: true, tty: true });
  const status = h.status('uid-web');
  t.is(status.ephemeralContainerStatuses?.length, 1);
  t.like(status.ephemeralContainerStatuses![0], { name: 'debugger', ready: false, restartCount: 0 });
  t.truthy(status.ephemeralContainerStatuses![0]!.state?.running);
  t.like(status, { phase: 'Running' });
  t.is(status.conditions?.find((c) => c.type === 'Ready')?.status, 'True', 'readiness ignores it');
});

test('an ephemeral container that exits is not restarted, and the pod keeps running', async (t) => {
  const h = await startHarness();
  t.teardown(() => h.kubelet.stop());
  const creates = recordCreates(h);
  // The fake runtime reads a container's script from the sandbox's annotations: set from the start.
  const script = { [`${B}debugger`]: 'exitAfter=1s,exitCode=0' };
  h.source.set([makePod('web', {}, script)]);
  await h.clock.advance(2_000);
  h.source.set([debugged(script)]);
  await h.clock.advance(120_000);
  t.is(creates.filter((c) => c.config?.metadata?.name === 'debugger').length, 1, 'started once');
  const status = h.status('uid-web');
  t.like(status.ephemeralContainerStatuses![0]!.state?.terminated, { exitCode: 0, reason: 'Completed' });
  t.is(status.phase, 'Running');
  t.is(status.containerStatuses![0]!.restartCount, 0, 'the app container is untouched');
});
