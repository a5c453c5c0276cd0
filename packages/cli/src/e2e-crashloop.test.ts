import test from 'ava';
import { KubeletProcess, podManifest, pollUntil, type TableRow } from './test-helpers.js';

/**
 * A crash-looping container through the real command, in real time: the fake runtime's annotation makes
 * the container exit 1 a second after each start. Upstream restarts it at once the first time, then
 * backs off 10 s, 20 s, …; `get pods` shows CrashLoopBackOff and a rising RESTARTS count.
 */
test('a crash-looping container shows CrashLoopBackOff and a rising RESTARTS count', async (t) => {
  // Deadlines are 3× what each step takes on a loaded 2-core machine (the first backoff is 10 s, the
  // next 20 s, plus the kubelet's start and 1 s runs); the whole test may take up to their sum.
  t.timeout(200_000);
  const k = await KubeletProcess.start(t);
  k.writeManifest(
    'crash.yaml',
    podManifest('crash', 'busybox', { 'runtime-fake.nodelet.dev/all': 'exitAfter=1s,exitCode=1' }),
  );

  const seen: TableRow[] = [];
  const restarts = (r: TableRow) => Number(/^\d+/.exec(r.RESTARTS ?? '')?.[0] ?? NaN);
  const poll = (what: string, ok: (r: TableRow) => boolean, timeoutMs: number) =>
    pollUntil(
      what,
      async () => {
        const row = (await k.rows()).find((r) => r.NAME === 'crash-node1');
        if (row) seen.push(row);
        return row && ok(row) ? row : undefined;
      },
      {
        timeoutMs,
        intervalMs: 250,
        describe: () =>
          seen
            .slice(-5)
            .map((r) => JSON.stringify(r))
            .join('\n'),
      },
    );

  const backoff = await poll(
    'CrashLoopBackOff',
    (r) => r.STATUS === 'CrashLoopBackOff' && restarts(r) >= 1,
    60_000,
  );
  t.is(backoff.READY, '0/1');
  t.regex(backoff.RESTARTS!, /^\d+ \(\d+s ago\)$/, 'RESTARTS shows when the last one was');
  const before = restarts(backoff);

  const later = await poll('RESTARTS to rise', (r) => restarts(r) > before, 90_000);
  t.true(restarts(later) > before);
  // Between restarts it is backing off again.
  await poll(
    'CrashLoopBackOff again',
    (r) => r.STATUS === 'CrashLoopBackOff' && restarts(r) > before,
    30_000,
  );
  t.true(
    seen.some((r) => r.STATUS === 'Running' || r.STATUS === 'Error' || r.STATUS === 'CrashLoopBackOff'),
    'statuses seen: ' + [...new Set(seen.map((r) => r.STATUS))].join(', '),
  );

  t.deepEqual(await k.stop(), { code: 0, signal: null });
});
