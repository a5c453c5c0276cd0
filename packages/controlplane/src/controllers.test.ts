import test from 'ava';
import type { KubeObject } from './object.js';
import { readyNode, startCluster, waitFor, type TestCluster } from './test-helpers.js';

// The in-process controllers, driven through the registry (the same code path as the HTTP API).

let c: TestCluster;

test.before(async () => {
  c = await startCluster();
});

test.after.always(async () => {
  await c?.destroy();
});

const reg = () => c.cp.registry;
const type = (storage: string) => reg().byStorage(storage);
const get = (storage: string, ns: string, name: string) => reg().store.get(storage, ns, name)?.object;

function pod(
  name: string,
  _ns: string,
  spec: Record<string, unknown> = {},
  labels: Record<string, string> = {},
): object {
  const { container, ...rest } = spec;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'busybox', ...((container as object) ?? {}) }], ...rest },
  };
}

function ns(name: string): void {
  reg().create(type('namespaces'), '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

const requests = (cpu: string) => ({ container: { resources: { requests: { cpu, memory: '64Mi' } } } });

async function boundTo(namespace: string, name: string): Promise<string> {
  return waitFor(
    () => get('pods', namespace, name)?.spec?.nodeName as string | undefined,
    `pod ${name} bound`,
  );
}

async function unschedulable(namespace: string, name: string): Promise<KubeObject> {
  return waitFor(() => {
    const p = get('pods', namespace, name);
    const cond = p?.status?.conditions?.find((x: any) => x.type === 'PodScheduled');
    return cond?.status === 'False' ? cond : undefined;
  }, `pod ${name} marked unschedulable`);
}

test.serial('scheduler: no nodes → PodScheduled=False with a FailedScheduling event', async (t) => {
  ns('sched-none');
  reg().create(type('pods'), 'sched-none', pod('lonely', 'sched-none'));
  const cond = await unschedulable('sched-none', 'lonely');
  t.is(cond.reason, 'Unschedulable');
  t.is(cond.message, 'no nodes available to schedule pods');
  const event = await waitFor(
    () =>
      reg()
        .store.listAll('events', 'sched-none')
        .map((e) => e.object)
        .find((e) => e.reason === 'FailedScheduling'),
    'the FailedScheduling event',
  );
  t.is(event.type, 'Warning');
  t.is(event.involvedObject.name, 'lonely');
  t.is(event.source.component, 'default-scheduler');
  reg().delete(type('pods'), 'sched-none', 'lonely');
});

test.serial(
  'scheduler: requests against allocatable; a new node takes the pod that did not fit',
  async (t) => {
    ns('sched-fit');
    reg().create(type('nodes'), '', readyNode('small-a', { cpu: '1', memory: '1Gi' }));
    reg().create(type('pods'), 'sched-fit', pod('one', 'sched-fit', requests('600m')));
    t.is(await boundTo('sched-fit', 'one'), 'small-a');
    reg().create(type('pods'), 'sched-fit', pod('two', 'sched-fit', requests('600m')));
    const cond = await unschedulable('sched-fit', 'two');
    t.is(cond.message, '0/1 nodes are available: 1 Insufficient cpu.');
    reg().create(type('nodes'), '', readyNode('small-b', { cpu: '1', memory: '1Gi' }));
    t.is(await boundTo('sched-fit', 'two'), 'small-b');
    const scheduled = get('pods', 'sched-fit', 'two')!.status.conditions.find(
      (x: any) => x.type === 'PodScheduled',
    );
    t.is(scheduled.status, 'True');
    // A finished pod frees its requests.
    reg().update(
      type('pods'),
      'sched-fit',
      'one',
      { ...get('pods', 'sched-fit', 'one'), status: { phase: 'Succeeded' } },
      { subresource: 'status' },
    );
    reg().create(type('pods'), 'sched-fit', pod('three', 'sched-fit', requests('600m')));
    t.is(await boundTo('sched-fit', 'three'), 'small-a');
  },
);

test.serial('scheduler: nodeSelector, node affinity and taints/tolerations', async (t) => {
  ns('sched-sel');
  reg().create(
    type('nodes'),
    '',
    readyNode('gpu-1', {
      labels: { accel: 'gpu' },
      taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
    }),
  );
  reg().create(type('nodes'), '', readyNode('ssd-1', { labels: { disk: 'ssd' } }));
  reg().create(type('pods'), 'sched-sel', pod('wants-ssd', 'sched-sel', { nodeSelector: { disk: 'ssd' } }));
  t.is(await boundTo('sched-sel', 'wants-ssd'), 'ssd-1');
  reg().create(
    type('pods'),
    'sched-sel',
    pod('wants-gpu', 'sched-sel', {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'accel', operator: 'In', values: ['gpu'] }] }],
          },
        },
      },
    }),
  );
  const cond = await unschedulable('sched-sel', 'wants-gpu');
  t.regex(
    cond.message,
    /^0\/\d+ nodes are available: .*1 node\(s\) had untolerated taint \{dedicated: gpu\}/,
  );
  t.regex(cond.message, /node\(s\) didn't match Pod's node affinity\/selector/);
  reg().delete(type('pods'), 'sched-sel', 'wants-gpu', { gracePeriodSeconds: 0 });
  reg().create(
    type('pods'),
    'sched-sel',
    pod('tolerates-gpu', 'sched-sel', {
      nodeSelector: { accel: 'gpu' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
    }),
  );
  t.is(await boundTo('sched-sel', 'tolerates-gpu'), 'gpu-1');
});

test.serial('scheduler: pods without requests spread over the nodes (scored as 100m / 200Mi)', async (t) => {
  ns('spread');
  for (const name of ['twin-a', 'twin-b'])
    reg().create(type('nodes'), '', readyNode(name, { labels: { pool: 'twin' } }));
  const placed: string[] = [];
  for (let i = 0; i < 6; i++) {
    reg().create(type('pods'), 'spread', pod(`s${i}`, 'spread', { nodeSelector: { pool: 'twin' } }));
    placed.push(await boundTo('spread', `s${i}`));
  }
  t.deepEqual(placed, ['twin-a', 'twin-b', 'twin-a', 'twin-b', 'twin-a', 'twin-b']);
});

test.serial(
  'deletion: an unscheduled pod goes at once; a scheduled one terminates until confirmed; finalizers hold',
  async (t) => {
    ns('del');
    const pods = type('pods');
    reg().create(pods, 'del', pod('pending', 'del', { schedulerName: 'other-scheduler' }));
    const r1 = reg().delete(pods, 'del', 'pending');
    t.true(r1.deleted);
    t.is(get('pods', 'del', 'pending'), undefined);

    reg().create(
      pods,
      'del',
      pod('running', 'del', { nodeName: 'ssd-1', terminationGracePeriodSeconds: 45 }),
    );
    const r2 = reg().delete(pods, 'del', 'running');
    t.false(r2.deleted);
    const marked = get('pods', 'del', 'running')!;
    t.is(marked.metadata.deletionGracePeriodSeconds, 45);
    t.truthy(marked.metadata.deletionTimestamp);
    // A second delete with a shorter grace shortens it; a longer one changes nothing.
    reg().delete(pods, 'del', 'running', { gracePeriodSeconds: 10 });
    t.is(get('pods', 'del', 'running')!.metadata.deletionGracePeriodSeconds, 10);
    reg().delete(pods, 'del', 'running', { gracePeriodSeconds: 60 });
    t.is(get('pods', 'del', 'running')!.metadata.deletionGracePeriodSeconds, 10);
    const uid = marked.metadata.uid;
    t.throws(
      () => reg().delete(pods, 'del', 'running', { gracePeriodSeconds: 0, preconditions: { uid: 'other' } }),
      { message: /Precondition failed/ },
    );
    t.true(reg().delete(pods, 'del', 'running', { gracePeriodSeconds: 0, preconditions: { uid } }).deleted);

    const cms = type('configmaps');
    reg().create(cms, 'del', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'held', finalizers: ['example.com/hold'] },
    });
    t.false(reg().delete(cms, 'del', 'held').deleted);
    const held = get('configmaps', 'del', 'held')!;
    t.truthy(held.metadata.deletionTimestamp);
    reg().update(cms, 'del', 'held', { ...held, metadata: { ...held.metadata, finalizers: [] } });
    t.is(get('configmaps', 'del', 'held'), undefined);
  },
);

function readyPod(
  name: string,
  _ip: string,
  labels: Record<string, string>,
  port: number,
  node = 'ssd-1',
): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: {
      nodeName: node,
      containers: [{ name: 'c', image: 'x', ports: [{ name: 'http', containerPort: port }] }],
    },
  };
}

function setRunning(namespace: string, name: string, ip: string, ready = true): void {
  const p = get('pods', namespace, name)!;
  reg().update(
    type('pods'),
    namespace,
    name,
    {
      ...p,
      status: {
        phase: 'Running',
        podIP: ip,
        podIPs: [{ ip }],
        conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      },
    },
    { subresource: 'status' },
  );
}

const slicesOf = (namespace: string, svc: string) =>
  reg()
    .store.listAll('endpointslices', namespace)
    .map((s) => s.object)
    .filter((s) => s.metadata.labels?.['kubernetes.io/service-name'] === svc);

test.serial('endpointslices: at most 100 endpoints per slice, named ports resolved per pod', async (t) => {
  ns('eps');
  reg().create(type('services'), 'eps', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'big' },
    spec: { selector: { app: 'big' }, ports: [{ name: 'web', port: 80, targetPort: 'http' }] },
  });
  const placeholder = await waitFor(
    () => (slicesOf('eps', 'big').length === 1 ? slicesOf('eps', 'big') : undefined),
    'the placeholder slice',
  );
  t.deepEqual(placeholder[0]!.endpoints, []);
  for (let i = 0; i < 150; i++) {
    reg().create(
      type('pods'),
      'eps',
      readyPod(`p${i}`, `10.1.${Math.floor(i / 200)}.${i % 200}`, { app: 'big' }, i < 140 ? 8080 : 9090),
    );
    setRunning('eps', `p${i}`, `10.1.0.${i + 1}`);
  }
  const slices = await waitFor(() => {
    const s = slicesOf('eps', 'big');
    const total = s.reduce((n, x) => n + (x.endpoints ?? []).length, 0);
    return total === 150 ? s : undefined;
  }, '150 endpoints in slices');
  const byPort = (port: number) => slices.filter((s) => s.ports?.[0]?.port === port);
  t.deepEqual(
    byPort(8080)
      .map((s) => s.endpoints.length)
      .sort((a: number, b: number) => b - a),
    [100, 40],
  );
  t.deepEqual(
    byPort(9090).map((s) => s.endpoints.length),
    [10],
  );
  for (const s of slices) {
    t.true(s.endpoints.length <= 100);
    t.is(s.addressType, 'IPv4');
    t.is(s.metadata.labels!['endpointslice.kubernetes.io/managed-by'], 'endpointslice-controller.k8s.io');
    t.is(s.ports[0].name, 'web');
    t.is(s.metadata.ownerReferences![0].kind, 'Service');
  }
});

test.serial('endpointslices: ready, serving and terminating follow the pod', async (t) => {
  ns('eps2');
  reg().create(type('services'), 'eps2', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
  });
  reg().create(type('pods'), 'eps2', readyPod('a', '', { app: 'web' }, 8080));
  reg().create(type('pods'), 'eps2', readyPod('b', '', { app: 'web' }, 8080));
  reg().create(type('pods'), 'eps2', readyPod('no-ip', '', { app: 'web' }, 8080));
  setRunning('eps2', 'a', '10.2.0.1', true);
  setRunning('eps2', 'b', '10.2.0.2', false);
  const endpoints = () => slicesOf('eps2', 'web').flatMap((s) => s.endpoints ?? []);
  await waitFor(() => (endpoints().length === 2 ? true : undefined), 'two endpoints');
  const cond = (name: string) => endpoints().find((e: any) => e.targetRef.name === name)?.conditions;
  t.deepEqual(cond('a'), { ready: true, serving: true, terminating: false });
  t.deepEqual(cond('b'), { ready: false, serving: false, terminating: false });
  t.is(endpoints().find((e: any) => e.targetRef.name === 'a').nodeName, 'ssd-1');
  reg().delete(type('pods'), 'eps2', 'a');
  await waitFor(() => (cond('a')?.terminating ? true : undefined), 'a terminating');
  t.deepEqual(cond('a'), { ready: false, serving: true, terminating: true });
  reg().delete(type('pods'), 'eps2', 'a', { gracePeriodSeconds: 0 });
  await waitFor(() => (endpoints().length === 1 ? true : undefined), 'a gone from the slice');
  // The service goes: so do its slices.
  reg().delete(type('services'), 'eps2', 'web');
  await waitFor(() => (slicesOf('eps2', 'web').length === 0 ? true : undefined), 'slices removed');
  t.pass();
});
