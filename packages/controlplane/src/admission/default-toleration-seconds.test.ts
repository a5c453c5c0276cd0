import test from 'ava';
import { VirtualClock } from '@nodelet/kernel';
import { Registry } from '../apiserver/registry.js';
import { namespaces } from '../resources/namespaces.js';
import { pods } from '../resources/pods.js';
import { RevisionStore } from '../storage/revision-store.js';
import {
  DefaultTolerationSecondsAdmission,
  type DefaultTolerationSecondsOptions,
} from './default-toleration-seconds.js';

function registry(options?: DefaultTolerationSecondsOptions): Registry {
  const r = new Registry({
    store: new RevisionStore(':memory:'),
    clock: new VirtualClock(),
    types: [namespaces, pods],
    admission: [new DefaultTolerationSecondsAdmission(options)],
  });
  r.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return r;
}

const pod = (name: string, tolerations?: object[]) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { containers: [{ name: 'c', image: 'nginx' }], ...(tolerations ? { tolerations } : {}) },
});

const notReady = {
  key: 'node.kubernetes.io/not-ready',
  operator: 'Exists',
  effect: 'NoExecute',
  tolerationSeconds: 300,
};
const unreachable = { ...notReady, key: 'node.kubernetes.io/unreachable' };

test('a pod without them gets the not-ready and unreachable NoExecute tolerations for 300 s', (t) => {
  const { object } = registry().create(pods, 'default', pod('plain'));
  t.deepEqual(object.spec.tolerations, [notReady, unreachable]);
});

test('tolerations that already cover a taint (its key or none, NoExecute or any effect) are kept as they are', (t) => {
  const r = registry();
  const cases: [object[], object[]][] = [
    [[{ operator: 'Exists' }], [{ operator: 'Exists' }]],
    [[{ operator: 'Exists', effect: 'NoExecute' }], [{ operator: 'Exists', effect: 'NoExecute' }]],
    [
      [
        {
          key: 'node.kubernetes.io/unreachable',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 6000,
        },
      ],
      [
        {
          key: 'node.kubernetes.io/unreachable',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 6000,
        },
        notReady,
      ],
    ],
    // Another effect, or another key: the defaults are still added.
    [
      [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }],
      [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' },
        notReady,
        unreachable,
      ],
    ],
    [[{ key: 'gpu', operator: 'Exists' }], [{ key: 'gpu', operator: 'Exists' }, notReady, unreachable]],
  ];
  cases.forEach(([given, want], i) => {
    const { object } = r.create(pods, 'default', pod(`p${i}`, given));
    t.deepEqual(object.spec.tolerations, want, JSON.stringify(given));
  });
});

test('the seconds are configurable (--default-not-ready/unreachable-toleration-seconds)', (t) => {
  const { object } = registry({ notReadySeconds: 2, unreachableSeconds: 3 }).create(
    pods,
    'default',
    pod('p'),
  );
  t.deepEqual(
    object.spec.tolerations.map((x: any) => [x.key, x.tolerationSeconds]),
    [
      ['node.kubernetes.io/not-ready', 2],
      ['node.kubernetes.io/unreachable', 3],
    ],
  );
});

test('an update that leaves them out keeps them (tolerations may not be removed)', (t) => {
  const r = registry();
  const { object } = r.create(pods, 'default', pod('p'));
  const replaced = { ...object, spec: { ...object.spec, tolerations: undefined } };
  const { object: updated } = r.update(pods, 'default', 'p', replaced);
  t.deepEqual(updated.spec.tolerations, [notReady, unreachable]);
});
