import type { Pod, PodStatus } from '@nodelet/api';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import test from 'ava';
import { StatusManager } from './status-manager.js';

const pod: Pod = { metadata: { name: 'web', namespace: 'shop', uid: 'u1' }, spec: { containers: [] } };
const running = (ready: boolean): PodStatus => ({
  phase: 'Running',
  containerStatuses: [
    { name: 'a', ready, restartCount: 0, image: 'i', imageID: '', state: { running: { startedAt: 't' } } },
    {
      name: 'b',
      ready: false,
      restartCount: 0,
      image: 'i',
      imageID: '',
      state: { waiting: { reason: 'ContainerCreating' } },
    },
  ],
});

test('a changed status is emitted and logged at debug level once; the same status again is neither', (t) => {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const bus = new EventBus(clock, logger);
  const emitted: string[] = [];
  bus.on('[Status] Pod Status Changed').subscribe((e) => emitted.push(e.status.phase ?? ''));
  const manager = new StatusManager(bus, logger.child('status'));

  t.true(manager.set(pod, { phase: 'Pending' }));
  t.true(manager.set(pod, running(false)));
  t.false(manager.set(pod, running(false)), 'the same status is no change');
  t.true(manager.set(pod, running(true)), 'readiness alone is a change');

  t.deepEqual(emitted, ['Pending', 'Running', 'Running']);
  // Tools follow pod starts through this line (bench/src/pod-start.ts reads it at --v 2).
  t.deepEqual(
    logs.find('Pod status updated').map((r) => r.fields),
    [
      { pod: 'shop/web', podUID: 'u1', phase: 'Pending', running: '0/0' },
      { pod: 'shop/web', podUID: 'u1', phase: 'Running', running: '1/2' },
      { pod: 'shop/web', podUID: 'u1', phase: 'Running', running: '1/2' },
    ],
  );
  t.true(logs.find('Pod status updated').every((r) => r.level === 'debug'));
});
