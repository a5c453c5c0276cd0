import test from 'ava';
import type { KubeObject } from '../object.js';
import { isScalingEvent, scaleTargets } from './deployment-scale.js';

// Proportional scaling, with the example of the Kubernetes documentation (Deployments, "Proportional
// scaling"): 10 replicas, maxSurge 3, a rollout in progress (old 8, new 5), scaled to 15.

function rs(uid: string, replicas: number, created: string, desired: number, max: number, available = 0) {
  return {
    metadata: {
      name: uid,
      uid,
      creationTimestamp: created,
      annotations: {
        'deployment.kubernetes.io/desired-replicas': String(desired),
        'deployment.kubernetes.io/max-replicas': String(max),
      },
    },
    spec: { replicas },
    status: { availableReplicas: available },
  } as KubeObject;
}

const deployment = (replicas: number) =>
  ({
    metadata: { name: 'web' },
    spec: {
      replicas,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 3, maxUnavailable: 2 } },
    },
    status: { replicas: 13 },
  }) as KubeObject;

test('the 5 replicas added mid-rollout go 3 to the old ReplicaSet and 2 to the new one', (t) => {
  const old = rs('old', 8, '2026-01-01T00:00:00Z', 10, 13);
  const fresh = rs('new', 5, '2026-01-01T00:01:00Z', 10, 13);
  const d = deployment(15);
  t.true(isScalingEvent(d, [old, fresh]));
  const targets = scaleTargets(d, fresh, [old]);
  t.is(targets.get('old'), 11);
  t.is(targets.get('new'), 7);
});

test('one active ReplicaSet takes spec.replicas; a saturated new one leaves the old at zero', (t) => {
  const d = deployment(4);
  const only = rs('only', 2, '2026-01-01T00:00:00Z', 2, 3);
  t.deepEqual([...scaleTargets(d, only, [rs('idle', 0, '2025-12-01T00:00:00Z', 2, 3)])], [['only', 4]]);
  const fresh = rs('new', 4, '2026-01-01T00:01:00Z', 4, 7, 4);
  const old = rs('old', 1, '2026-01-01T00:00:00Z', 4, 7);
  t.deepEqual([...scaleTargets(d, fresh, [old])], [['old', 0]]);
  t.false(isScalingEvent(d, [fresh, old]));
});
