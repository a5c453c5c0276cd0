import test from 'ava';
import { map } from 'rxjs';
import { EventBus } from './bus.js';
import { VirtualClock } from './clock.js';
import { createLogger, MemorySink } from './logger.js';

// The kernel declares no events of its own; these tests declare theirs as a domain package does.
declare module './events.js' {
  interface EventCatalogue {
    '[PLEG] Container Started': { podUid: string; containerId: string };
    '[PLEG] Container Died': { podUid: string; containerId: string };
    '[Node] Condition Changed': {
      type: string;
      status: 'True' | 'False' | 'Unknown';
      reason: string;
      message: string;
    };
  }
}

test('a throwing handler is logged and neither it nor other subscribers lose events', (t) => {
  const sink = new MemorySink();
  const bus = new EventBus(new VirtualClock(), createLogger({ sink: sink.sink }));
  const seen: string[] = [];
  let calls = 0;
  bus.subscribe('[PLEG] Container Died', () => {
    calls++;
    throw new Error('boom');
  });
  bus.subscribe('[PLEG] Container Died', (e) => void seen.push(e.containerId));
  bus.emit('[PLEG] Container Died', { podUid: 'u', containerId: 'c1' });
  bus.emit('[PLEG] Container Died', { podUid: 'u', containerId: 'c2' });
  t.deepEqual(seen, ['c1', 'c2']);
  t.is(calls, 2);
  t.is(sink.find('event handler failed').length, 2);
});

test('an effect stream that errors is resubscribed', (t) => {
  const sink = new MemorySink();
  const bus = new EventBus(new VirtualClock(), createLogger({ sink: sink.sink }));
  const seen: string[] = [];
  bus.runEffect('flaky', () =>
    bus.on('[PLEG] Container Started').pipe(
      map((e) => {
        if (e.containerId === 'bad') throw new Error('bad container');
        seen.push(e.containerId);
      }),
    ),
  );
  for (const id of ['a', 'bad', 'b']) bus.emit('[PLEG] Container Started', { podUid: 'u', containerId: id });
  t.deepEqual(seen, ['a', 'b']);
  t.is(sink.find('effect failed; resubscribing').length, 1);
});

test('events are stamped with the clock time', async (t) => {
  const clock = new VirtualClock();
  const bus = new EventBus(clock, createLogger({ sink: () => {} }));
  const at: number[] = [];
  bus.subscribe('[Node] Condition Changed', (e) => void at.push(e.at));
  await clock.advance(1500);
  bus.emit('[Node] Condition Changed', {
    type: 'Ready',
    status: 'True',
    reason: 'KubeletReady',
    message: '',
  });
  t.deepEqual(at, [clock.now()]);
  t.is(clock.elapsed(), 1500);
});
