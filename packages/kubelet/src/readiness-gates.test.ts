import test from 'ava';
import type { Pod, PodCondition } from '@nodelet/api';
import { mergedStatus } from './apiserver/status-sync.js';
import { makePod, startHarness } from './test-harness.js';

// spec.readinessGates on the fake runtime under the virtual clock: Ready waits for the gate's condition,
// which someone else writes into the pod's status; the kubelet keeps that condition and syncs the pod
// again when it changes, as upstream.

const GATE = 'example.com/load-balancer';

function gated(conditions?: PodCondition[]): Pod {
  const pod = makePod('gated', { readinessGates: [{ conditionType: GATE }] });
  if (conditions) pod.status = { conditions };
  return pod;
}

const cond = (h: { status(uid: string): NonNullable<Pod['status']> }, type: string) =>
  h.status('uid-gated').conditions?.find((c) => c.type === type);

test('Ready waits for every readiness gate condition to be True, with upstream messages', async (t) => {
  const h = await startHarness();
  h.source.set([gated()]);
  await h.clock.advance(2_000);
  t.is(cond(h, 'ContainersReady')?.status, 'True');
  t.like(cond(h, 'Ready'), {
    status: 'False',
    reason: 'ReadinessGatesNotReady',
    message: `corresponding condition of pod readiness gate "${GATE}" does not exist.`,
  });

  h.source.set([gated([{ type: GATE, status: 'False' }])]);
  await h.clock.advance(1_000);
  t.like(cond(h, 'Ready'), {
    status: 'False',
    reason: 'ReadinessGatesNotReady',
    message: `the status of pod readiness gate "${GATE}" is not "True", but False`,
  });
  t.is(cond(h, GATE)?.status, 'False', 'the foreign condition is kept in the status');

  h.source.set([gated([{ type: GATE, status: 'True', lastTransitionTime: '2026-01-01T00:00:03Z' }])]);
  await h.clock.advance(1_000);
  t.is(cond(h, 'Ready')?.status, 'True');
  t.is(cond(h, 'Ready')?.reason, undefined);
  t.like(cond(h, GATE), { status: 'True', lastTransitionTime: '2026-01-01T00:00:03Z' });
  await h.kubelet.stop();
});

test('unready containers decide Ready before the gates do', async (t) => {
  const h = await startHarness();
  const pod = gated([{ type: GATE, status: 'True' }]);
  pod.spec!.containers[0]!.readinessProbe = { exec: { command: ['false'] }, periodSeconds: 1 };
  h.source.set([pod]);
  await h.clock.advance(5_000);
  t.like(cond(h, 'Ready'), {
    status: 'False',
    reason: 'ContainersNotReady',
    message: 'containers with unready status: [main]',
  });
  await h.kubelet.stop();
});

test('the status written to the API keeps the conditions others own', (t) => {
  const api = { conditions: [{ type: GATE, status: 'True', lastTransitionTime: '2026-01-01T00:00:09Z' }] };
  const ours = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } as const;
  const merged = mergedStatus(api, { ...ours, conditions: [...ours.conditions] });
  t.deepEqual(
    merged.conditions?.map((c) => [c.type, c.status]),
    [
      ['Ready', 'True'],
      [GATE, 'True'],
    ],
  );
});
