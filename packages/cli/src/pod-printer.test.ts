import test from 'ava';
import type { Pod } from '@nodelet/api';
import { formatTable, humanDuration, podRow, printPodTable, sortPods } from './pod-printer.js';

const NOW = Date.parse('2026-01-01T12:00:00Z');
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString().replace('.000Z', 'Z');

test('humanDuration matches apimachinery HumanDuration', (t) => {
  const s = 1000;
  const m = 60 * s;
  const h = 60 * m;
  const d = 24 * h;
  const cases: Array<[number, string]> = [
    [-2500, '<invalid>'],
    [-1500, '0s'],
    [-999, '0s'],
    [0, '0s'],
    [999, '0s'],
    [5 * s, '5s'],
    [59 * s, '59s'],
    [119 * s + 900, '119s'],
    [2 * m, '2m'],
    [3 * m + 2 * s, '3m2s'],
    [9 * m + 59 * s, '9m59s'],
    [10 * m + 30 * s, '10m'],
    [179 * m, '179m'],
    [3 * h, '3h'],
    [5 * h + 30 * m, '5h30m'],
    [7 * h + 59 * m, '7h59m'],
    [8 * h + 30 * m, '8h'],
    [47 * h, '47h'],
    [2 * d, '2d'],
    [3 * d + 4 * h, '3d4h'],
    [7 * d + 23 * h, '7d23h'],
    [8 * d + 5 * h, '8d'],
    [400 * d, '400d'],
    [730 * d, '2y'],
    [735 * d, '2y5d'],
    [8 * 365 * d + 3 * d, '8y'],
  ];
  for (const [ms, want] of cases) t.is(humanDuration(ms), want, `${ms} ms`);
});

// The cells themselves are kubectl's printPod, table-tested with @nodelet/api's podCells; here: what
// `nodelet get pods` adds (namespace, name, AGE of kubelet-only pods) and how the table is laid out.

/** A pod from the kubelet's /pods with one container `app` in `state`; seen 5 s ago. */
function pod(
  name: string,
  state: Record<string, unknown> = { running: { startedAt: ago(5) } },
  extra: {
    restartCount?: number;
    lastState?: Record<string, unknown>;
    metadata?: Record<string, unknown>;
  } = {},
): Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      annotations: { 'kubernetes.io/config.seen': new Date(NOW - 5000).toISOString() },
      ...extra.metadata,
    },
    spec: { nodeName: 'node1', containers: [{ name: 'app', image: 'busybox' }] },
    status: {
      phase: 'Running',
      podIP: '10.244.0.2',
      podIPs: [{ ip: '10.244.0.2' }],
      containerStatuses: [
        {
          name: 'app',
          image: 'busybox',
          imageID: '',
          ready: 'running' in state,
          restartCount: extra.restartCount ?? 0,
          state,
          ...(extra.lastState ? { lastState: extra.lastState } : {}),
        },
      ],
    },
  } as Pod;
}

test("a row is printPod's cells with the namespace, the name and the AGE", (t) => {
  t.deepEqual(podRow(pod('web'), NOW), {
    namespace: 'default',
    name: 'web',
    ready: '1/1',
    status: 'Running',
    restarts: '0',
    age: '5s',
    ip: '10.244.0.2',
    node: 'node1',
    nominatedNode: '<none>',
    readinessGates: '<none>',
  });
});

test("AGE: creationTimestamp (an API server's) before config.seen (a kubelet's), else <unknown>", (t) => {
  const created = pod('old', undefined, { metadata: { creationTimestamp: ago(3 * 86400 + 4 * 3600) } });
  t.is(podRow(created, NOW).age, '3d4h');
  t.is(podRow(pod('seen'), NOW).age, '5s');
  t.is(podRow(pod('nodate', undefined, { metadata: { annotations: {} } }), NOW).age, '<unknown>');
});

test('table is laid out like kubectl (tabwriter: min width 6, padding 3)', (t) => {
  const pods = [
    pod('nginx-node1'),
    pod(
      'crash-node1',
      { waiting: { reason: 'CrashLoopBackOff' } },
      { restartCount: 2, lastState: { terminated: { exitCode: 1, finishedAt: ago(4) } } },
    ),
  ];
  t.is(
    printPodTable(sortPods(pods), { now: NOW }),
    [
      'NAME          READY   STATUS             RESTARTS     AGE',
      'crash-node1   0/1     CrashLoopBackOff   2 (4s ago)   5s',
      'nginx-node1   1/1     Running            0            5s',
      '',
    ].join('\n'),
  );
  t.is(
    printPodTable([pods[0]!], { now: NOW, wide: true, withNamespace: true }),
    [
      'NAMESPACE   NAME          READY   STATUS    RESTARTS   AGE   IP           NODE    NOMINATED NODE   READINESS GATES',
      'default     nginx-node1   1/1     Running   0          5s    10.244.0.2   node1   <none>           <none>',
      '',
    ].join('\n'),
  );
  t.is(printPodTable([pods[0]!], { now: NOW, noHeaders: true }), 'nginx-node1   1/1   Running   0     5s\n');
  t.is(
    formatTable([
      ['a', 'b'],
      ['ccccccc', 'd'],
    ]),
    'a         b\nccccccc   d\n',
  );
});

test('pods are listed by namespace, then name', (t) => {
  const p = (ns: string, name: string) => ({ metadata: { namespace: ns, name } }) as Pod;
  t.deepEqual(
    sortPods([p('kube-system', 'a'), p('default', 'b'), p('default', 'a')]).map(
      (x) => `${x.metadata!.namespace}/${x.metadata!.name}`,
    ),
    ['default/a', 'default/b', 'kube-system/a'],
  );
});
