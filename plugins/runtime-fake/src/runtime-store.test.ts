import test from 'ava';
import { ContainerState, PodSandboxState } from '@nodelet/cri';
import type { ContainerRecord, SandboxRecord } from './records.js';
import { RuntimeStore } from './runtime-store.js';

/** Labels that count how often they are read: a filter that scans reads every record's labels. */
function countingLabels(labels: Record<string, string>, counter: { reads: number }): Record<string, string> {
  return new Proxy(labels, {
    get(target, key) {
      counter.reads++;
      return Reflect.get(target, key);
    },
  });
}

function fill(n: number) {
  const counter = { reads: 0 };
  const store = new RuntimeStore();
  for (let i = 0; i < n; i++) {
    const labels = countingLabels(
      { 'io.kubernetes.pod.uid': `uid-${i}`, app: i % 2 ? 'odd' : 'even' },
      counter,
    );
    const sandbox = {
      id: `s${i}`,
      reservedName: `p${i}_default_uid-${i}_0`,
      config: { labels },
      podUid: `uid-${i}`,
      containers: new Set(),
      state: PodSandboxState.SANDBOX_READY,
    } as unknown as SandboxRecord;
    store.addSandbox(sandbox);
    store.addContainer({
      id: `c${i}`,
      sandbox,
      reservedName: `app_p${i}_default_uid-${i}_0`,
      config: { labels },
      podUid: `uid-${i}`,
      state: ContainerState.CONTAINER_RUNNING,
    } as unknown as ContainerRecord);
  }
  return { store, counter };
}

test('filters on the pod-UID label read only that pod, not every record', (t) => {
  const { store, counter } = fill(5000);
  const selector = { 'io.kubernetes.pod.uid': 'uid-4321', app: 'odd' };
  const sandboxes = [...store.findSandboxes({ id: '', labelSelector: selector })];
  const containers = [...store.findContainers({ id: '', podSandboxId: '', labelSelector: selector })];
  t.deepEqual(
    sandboxes.map((s) => s.id),
    ['s4321'],
  );
  t.deepEqual(
    containers.map((c) => c.id),
    ['c4321'],
  );
  t.true(counter.reads <= 4, `${counter.reads} label reads`);

  counter.reads = 0;
  t.is([...store.findContainers({ id: '', podSandboxId: '', labelSelector: { app: 'odd' } })].length, 2500);
  t.true(counter.reads >= 5000, 'a selector without the pod UID has to look at every container');
});

test('by id and by sandbox: direct lookups; removal cleans every index', (t) => {
  const { store, counter } = fill(1000);
  t.deepEqual(
    [...store.findContainers({ id: 'c7', podSandboxId: '', labelSelector: {} })].map((c) => c.id),
    ['c7'],
  );
  t.deepEqual(
    [...store.findContainers({ id: '', podSandboxId: 's8', labelSelector: {} })].map((c) => c.id),
    ['c8'],
  );
  t.is(counter.reads, 0);
  const c = store.container('c9')!;
  store.deleteContainer(c);
  store.deleteSandbox(c.sandbox);
  t.is(store.sandbox('s9'), undefined);
  t.is(store.containerNameHolder('app_p9_default_uid-9_0'), undefined);
  t.is(store.sandboxNameHolder('p9_default_uid-9_0'), undefined);
  t.deepEqual([...store.findSandboxes({ id: '', labelSelector: { 'io.kubernetes.pod.uid': 'uid-9' } })], []);
  t.is(c.sandbox.containers.size, 0);
  t.is(store.containerCount, 999);
});

test('ids by unique prefix, as containerd: lookups and id filters; an ambiguous prefix names nothing', (t) => {
  const { store } = fill(20); // s0 … s19, c0 … c19
  t.is(store.container('c7')?.id, 'c7', 'an exact id wins over the longer ids it prefixes');
  t.is(store.sandbox('s15')?.id, 's15');
  t.is(store.container('c1'), store.container('c1'), 'exact');
  t.is(store.sandbox('s'), undefined, 'ambiguous');
  t.is(store.container('x'), undefined, 'unknown');
  t.deepEqual(
    [...store.findContainers({ id: '', podSandboxId: 's1', labelSelector: {} })].map((c) => c.id),
    ['c1'],
  );
  const onlyOne = new RuntimeStore();
  const sandbox = {
    id: 'abcdef',
    reservedName: 'p_default_u_0',
    config: { labels: {} },
    containers: new Set(),
    state: PodSandboxState.SANDBOX_READY,
  } as unknown as SandboxRecord;
  onlyOne.addSandbox(sandbox);
  onlyOne.addContainer({
    id: '123456',
    sandbox,
    reservedName: 'app_p_default_u_0',
    config: { labels: {} },
    state: ContainerState.CONTAINER_RUNNING,
  } as unknown as ContainerRecord);
  t.is(onlyOne.sandbox('abc')?.id, 'abcdef');
  t.deepEqual(
    [...onlyOne.findSandboxes({ id: 'ab', labelSelector: {} })].map((s) => s.id),
    ['abcdef'],
  );
  t.deepEqual(
    [...onlyOne.findContainers({ id: '12', podSandboxId: 'abcd', labelSelector: {} })].map((c) => c.id),
    ['123456'],
  );
  t.deepEqual([...onlyOne.findContainers({ id: '', podSandboxId: 'abx', labelSelector: {} })], []);
});
