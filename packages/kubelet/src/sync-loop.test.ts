import test from 'ava';
import type { Pod } from '@nodelet/api';
import { createLogger, EventBus, VirtualClock } from '@nodelet/kernel';
import { NEVER, Subject } from 'rxjs';
import type { PlegChange } from './pleg.js';
import {
  housekeepingTicks,
  runSyncLoop,
  type SyncHandler,
  type SyncLoopEvent,
  syncLoopIteration,
} from './sync-loop.js';

const pod = (uid: string): Pod => ({
  metadata: { uid, name: uid, namespace: 'default' },
  spec: { containers: [] },
});

/** A handler that writes down each call. */
function recorder() {
  const calls: string[] = [];
  const handler: SyncHandler = {
    handlePodAdditionsOrUpdates: (p) => void calls.push(`upsert ${p.metadata!.uid}`),
    handlePodRemoves: (p) => void calls.push(`remove ${p.metadata!.uid}`),
    handlePlegEvents: (changes) => void calls.push(`pleg ${[...changes.keys()].join(',')}`),
    handlePodSyncs: (uid) => void calls.push(`sync ${uid}`),
    handlePodCleanups: async () => void calls.push('cleanups'),
  };
  return { calls, handler };
}

test('syncLoopIteration: each kind of event goes to its handler', async (t) => {
  const changes = new Map<string, PlegChange[]>([['u3', [{ kind: 'container', id: 'c', state: 'exited' }]]]);
  const table: [SyncLoopEvent, string][] = [
    [{ kind: 'config', op: 'add', source: 'file', pod: pod('u1') }, 'upsert u1'],
    [{ kind: 'config', op: 'update', source: 'api', pod: pod('u1') }, 'upsert u1'],
    [{ kind: 'config', op: 'remove', source: 'file', pod: pod('u2') }, 'remove u2'],
    [{ kind: 'pleg', changes }, 'pleg u3'],
    [{ kind: 'probe', podUid: 'u4' }, 'sync u4'],
    [{ kind: 'requeue', podUid: 'u5' }, 'sync u5'],
  ];
  for (const [event, call] of table) {
    const { calls, handler } = recorder();
    await syncLoopIteration(event, handler);
    t.deepEqual(calls, [call], event.kind);
  }
  const { calls, handler } = recorder();
  let done = false;
  await syncLoopIteration({ kind: 'housekeeping', done: () => (done = true) }, handler);
  t.deepEqual(calls, ['cleanups']);
  t.true(done, 'a housekeeping tick is told when its pass ended');
});

test('the loop merges every source into one handler, in order; a failing event does not end it', (t) => {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: () => {} });
  const bus = new EventBus(clock, logger);
  const pleg$ = new Subject<ReadonlyMap<string, PlegChange[]>>();
  const probe$ = new Subject<string>();
  const requeue$ = new Subject<string>();
  const { calls, handler } = recorder();
  const failing: SyncHandler = {
    ...handler,
    handlePodSyncs: (uid) => {
      if (uid === 'bad') throw new Error('boom');
      handler.handlePodSyncs(uid);
    },
  };
  const loop = runSyncLoop({ bus, pleg$, probe$, requeue$, housekeeping$: NEVER }, failing, logger);
  bus.emit('[Source] Pod Added', { source: 'file', pod: pod('a') });
  pleg$.next(new Map([['a', []]]));
  probe$.next('bad');
  probe$.next('a');
  requeue$.next('a');
  bus.emit('[Source] Pod Removed', { source: 'file', pod: pod('a') });
  loop.unsubscribe();
  probe$.next('a');
  t.deepEqual(calls, ['upsert a', 'pleg a', 'sync a', 'sync a', 'remove a']);
});

test('housekeeping ticks: the first after one period, the next one period after a pass ended', async (t) => {
  const clock = new VirtualClock();
  const passes: number[] = [];
  const subscription = housekeepingTicks(clock, 2_000).subscribe((tick) => {
    passes.push(clock.elapsed());
    clock.setTimeout(tick.done, 500); // a pass that takes 0.5 s
  });
  await clock.advance(7_500);
  subscription.unsubscribe();
  await clock.advance(10_000);
  t.deepEqual(passes, [2_000, 4_500, 7_000]);
});
