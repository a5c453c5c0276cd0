import type { Socket } from 'node:net';
import { Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import test from 'ava';
import { relayReads } from './relay.js';

/**
 * A target socket whose kernel buffer is full: every write stays pending until the test lets the
 * kernel take it. (A socket is a Writable; only write, writableLength and the events matter here.)
 */
function fullTarget() {
  const pending: (() => void)[] = [];
  const socket = new Writable({ write: (_chunk, _enc, taken) => void pending.push(() => taken()) });
  return { socket: socket as unknown as Socket, takeOne: () => pending.shift()!() };
}

for (const [what, bytes] of [
  ['a small read (under the socket’s high-water mark: no drain event follows)', 100],
  ['a large read', 256 * 1024],
] as const) {
  test(`${what} written while the target is full: reading stops, and resumes once the target took it`, async (t) => {
    const target = fullTarget();
    let resumed = 0;
    const source = { resume: () => void resumed++ } as unknown as Socket;
    const onread = relayReads(
      () => source,
      () => target.socket,
    );
    const buffer = (onread.buffer as () => Uint8Array)();
    const keepReading = onread.callback(bytes, buffer);
    t.false(keepReading, 'the buffer holds a pending write: it must not be read into');
    await nextTurn();
    t.is(resumed, 0);
    target.takeOne();
    await nextTurn();
    t.is(resumed, 1, 'reading resumed');
  });
}
