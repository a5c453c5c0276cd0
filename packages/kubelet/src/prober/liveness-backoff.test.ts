import test, { type ExecutionContext } from 'ava';
import type { Container } from '@nodelet/api';
import { makePod } from '../test-harness.js';
import { startFakeNode } from './test-fake-node.js';

/**
 * Upstream applies the CrashLoopBackOff schedule to every restart, whatever ended the container: one
 * a failing liveness probe kills is restarted 10, 20, 40 … 300 s after each death, exactly as one that
 * exits by itself. Virtual time on the fake runtime.
 */

const livenessProbe: Container['livenessProbe'] = {
  httpGet: { path: '/healthz', port: 8080 },
  periodSeconds: 1,
  failureThreshold: 1,
};

/** Virtual seconds, from the pod's creation, at which the restart count of `web` went up. */
async function restartTimes(
  t: ExecutionContext,
  annotation: string,
  withProbe: boolean,
  seconds: number,
): Promise<number[]> {
  const { clock, source, status } = await startFakeNode(t);
  source.set([
    makePod(
      'p',
      {
        containers: [
          {
            name: 'web',
            image: 'busybox:1.36',
            imagePullPolicy: 'IfNotPresent',
            ...(withProbe ? { livenessProbe } : {}),
          },
        ],
      },
      { 'runtime-fake.nodelet.dev/web': annotation },
    ),
  ]);
  const at: number[] = [];
  for (let s = 1; s <= seconds; s++) {
    await clock.advance(1_000);
    const count = status('p').containerStatuses?.[0]?.restartCount ?? 0;
    while (at.length < count) at.push(s);
  }
  return at;
}

const gaps = (at: number[]) => at.slice(1).map((s, i) => s - at[i]!);

test('a container a liveness probe keeps killing is restarted on the CrashLoopBackOff schedule', async (t) => {
  const killed = await restartTimes(t, 'livenessFail', true, 700);
  const exited = await restartTimes(t, 'crashLoop,exitAfter=1s', false, 700);
  t.log('liveness kills, restarts at', killed.join(' '));
  t.log('exits by itself, restarts at', exited.join(' '));
  t.true(killed.length <= 10, `${killed.length} restarts in 700 s, not one a second`);
  // Between restarts: the back-off (10, 20, 40, … capped at 300 s) plus the life of an instance.
  const backoffs = [10, 20, 40, 80, 160, 300, 300];
  gaps(killed).forEach((gap, i) => {
    const want = backoffs[i]!;
    t.true(
      gap >= want && gap <= want + 3,
      `gap ${i + 1}: ${gap} s, the back-off ${want} s plus the probe's second`,
    );
  });
  t.is(killed.length, exited.length, 'as many restarts as a container that exits by itself');
});
