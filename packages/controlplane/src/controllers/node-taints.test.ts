import test from 'ava';
import { rfc3339, type KubeObject } from '../object.js';
import { reconcileTaints, type Taint } from './node-taints.js';
import { evictionTime } from './taint-eviction-controller.js';

// The two decisions as tables: which taints a node's conditions call for, and when a pod must go.

const t0 = Date.UTC(2026, 0, 1);
const at = (s: number) => rfc3339(t0 + s * 1000);

function node(conditions: Record<string, string>, taints?: Taint[], unschedulable = false): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n' },
    spec: { ...(taints ? { taints } : {}), ...(unschedulable ? { unschedulable } : {}) },
    status: { conditions: Object.entries(conditions).map(([type, status]) => ({ type, status })) },
  };
}

const unreachableNoExecute = { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: at(0) };
const admin = { key: 'dedicated', value: 'db', effect: 'NoSchedule' };

test('reconcileTaints: the managed taints follow the conditions; others and timeAdded stay', (t) => {
  const cases: [string, KubeObject, Taint[] | undefined, boolean?][] = [
    ['healthy, nothing to do', node({ Ready: 'True' }, [admin]), undefined],
    [
      'Ready Unknown: unreachable NoSchedule and NoExecute (timeAdded now)',
      node({ Ready: 'Unknown' }, [admin]),
      [
        admin,
        { key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' },
        { ...unreachableNoExecute, timeAdded: at(60) },
      ],
    ],
    [
      'still Unknown: the NoExecute taint keeps its timeAdded',
      node({ Ready: 'Unknown' }, [
        { key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' },
        unreachableNoExecute,
      ]),
      undefined,
    ],
    [
      'Unknown → False: unreachable swapped for not-ready',
      node({ Ready: 'False' }, [
        { key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' },
        unreachableNoExecute,
      ]),
      [
        { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', timeAdded: at(60) },
      ],
    ],
    [
      'Ready again: the managed taints go, the admin’s stays',
      node({ Ready: 'True' }, [admin, unreachableNoExecute]),
      [admin],
    ],
    [
      'pressure and cordon: NoSchedule only',
      node(
        { Ready: 'True', MemoryPressure: 'True', DiskPressure: 'False', PIDPressure: 'True' },
        undefined,
        true,
      ),
      [
        { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/pid-pressure', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' },
      ],
    ],
    [
      'no node Ready (full disruption): no NoExecute, and a set one is removed',
      node({ Ready: 'Unknown' }, [unreachableNoExecute]),
      [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' }],
      false,
    ],
  ];
  for (const [what, n, want, noExecute] of cases)
    t.deepEqual(reconcileTaints(n, t0 + 60_000, noExecute), want, what);
});

test('evictionTime: now when untolerated, the earliest tolerationSeconds from timeAdded, never when for ever', (t) => {
  const notReady = { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', timeAdded: at(10) };
  const tol = (key: string | undefined, seconds?: number | null) => ({
    ...(key ? { key } : {}),
    operator: 'Exists',
    effect: 'NoExecute',
    ...(seconds !== undefined ? { tolerationSeconds: seconds } : {}),
  });
  const now = t0 + 20_000;
  const cases: [string, Taint[], object[], number | undefined][] = [
    ['no toleration', [unreachableNoExecute], [], now],
    ['another key only', [unreachableNoExecute], [tol('node.kubernetes.io/not-ready', 300)], now],
    [
      '300 s from timeAdded',
      [unreachableNoExecute],
      [tol('node.kubernetes.io/unreachable', 300)],
      t0 + 300_000,
    ],
    ['for ever (no seconds)', [unreachableNoExecute], [tol('node.kubernetes.io/unreachable')], undefined],
    [
      'null seconds is for ever too',
      [unreachableNoExecute],
      [tol('node.kubernetes.io/unreachable', null)],
      undefined,
    ],
    ['every NoExecute taint (empty key)', [unreachableNoExecute, notReady], [tol(undefined)], undefined],
    [
      'negative: at once from timeAdded',
      [unreachableNoExecute],
      [tol('node.kubernetes.io/unreachable', -5)],
      t0,
    ],
    [
      'two taints: the earliest deadline',
      [unreachableNoExecute, notReady],
      [tol('node.kubernetes.io/unreachable', 300), tol('node.kubernetes.io/not-ready', 60)],
      t0 + 70_000,
    ],
    [
      'one of two untolerated: now',
      [unreachableNoExecute, { key: 'maintenance', effect: 'NoExecute' }],
      [tol('node.kubernetes.io/unreachable', 300)],
      now,
    ],
    ['no timeAdded: counted from now', [{ key: 'x', effect: 'NoExecute' }], [tol('x', 2)], now + 2_000],
  ];
  for (const [what, taints, tolerations, want] of cases)
    t.is(evictionTime(taints, tolerations, now), want, what);
});
