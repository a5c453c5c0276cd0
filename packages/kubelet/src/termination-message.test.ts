import test from 'ava';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Container } from '@nodelet/api';
import { makePod, startHarness } from './test-harness.js';

// Termination messages on the fake runtime under the virtual clock: the fake "writes" its scripted
// message to the file the kubelet mounted at terminationMessagePath, the kubelet reads it back after
// the exit (at most 4 KiB), and the pod's 12 KiB budget is shared by its containers; under
// FallbackToLogsOnError a failed container with an empty file gets its log's last 80 lines / 2 KiB.

const c = (name: string, extra: Partial<Container> = {}): Container => ({
  name,
  image: 'busybox:1.36',
  imagePullPolicy: 'IfNotPresent',
  ...extra,
});

test('the message a container left in /dev/termination-log is state.terminated.message, then lastState', async (t) => {
  const h = await startHarness();
  h.runtime.script('main', { exitAfterMs: 2000, exitCode: 1, terminationMessage: 'disk full' });
  h.source.set([makePod('msg', { restartPolicy: 'Always' })]);
  await h.clock.advance(2_500);
  let s = h.status('uid-msg').containerStatuses![0]!;
  const terminated = s.state?.terminated ?? s.lastState?.terminated;
  t.is(terminated?.message, 'disk full', JSON.stringify(s));
  await h.clock.advance(2_000); // restarted at once, exited again: now in CrashLoopBackOff
  s = h.status('uid-msg').containerStatuses![0]!;
  t.is(s.state?.waiting?.reason, 'CrashLoopBackOff', JSON.stringify(s));
  t.is(s.lastState?.terminated?.message, 'disk full');
  t.is(s.lastState?.terminated?.exitCode, 1);

  // The file: under <root>/pods/<uid>/containers/<name>/, a random name per instance, mode 0666.
  const mounts = (await h.runtime.listContainers({})).containers.map((x) => x.id);
  const paths = new Set<string>();
  for (const id of mounts) {
    const st = (await h.runtime.containerStatus({ containerId: id, verbose: false })).status!;
    const m = st.mounts.find((x) => x.containerPath === '/dev/termination-log')!;
    paths.add(m.hostPath);
    t.is(dirname(m.hostPath), join(h.kubelet.options.rootDir, 'pods', 'uid-msg', 'containers', 'main'));
    t.is(statSync(m.hostPath).mode & 0o777, 0o666);
  }
  t.is(paths.size, 2, 'one file per instance');
  await h.kubelet.stop();
});

test('a custom path is mounted and read; an empty path mounts nothing', async (t) => {
  const h = await startHarness();
  h.runtime.script('custom', { exitAfterMs: 1000, exitCode: 0, terminationMessage: 'done' });
  h.runtime.script('none', { exitAfterMs: 1000, exitCode: 0, terminationMessage: 'lost' });
  h.source.set([
    makePod('paths', {
      restartPolicy: 'Never',
      containers: [
        c('custom', { terminationMessagePath: '/tmp/why' }),
        c('none', { terminationMessagePath: '' }),
      ],
    }),
  ]);
  await h.clock.advance(3_000);
  const statuses = h.status('uid-paths').containerStatuses!;
  t.is(statuses.find((s) => s.name === 'custom')!.state?.terminated?.message, 'done');
  t.is(statuses.find((s) => s.name === 'none')!.state?.terminated?.message, undefined);
  await h.kubelet.stop();
});

test('at most the last 4 KiB of a container message; the pod budget of 12 KiB is shared evenly', async (t) => {
  const h = await startHarness();
  // 5000 bytes: the last 4096 are read ("b" × 4096).
  h.runtime.script('big', {
    exitAfterMs: 1000,
    exitCode: 1,
    terminationMessage: 'a'.repeat(904) + 'b'.repeat(4096),
  });
  h.source.set([makePod('big', { restartPolicy: 'Never', containers: [c('big')] })]);
  // Five containers writing 4000 bytes each: 12288 / 5 = 2457 bytes each, the first ones.
  for (let i = 0; i < 5; i++)
    h.runtime.script(`w${i}`, { exitAfterMs: 1000, exitCode: 0, terminationMessage: `${i}`.repeat(4000) });
  h.source.set([
    makePod('big', { restartPolicy: 'Never', containers: [c('big')] }),
    makePod('five', { restartPolicy: 'Never', containers: [0, 1, 2, 3, 4].map((i) => c(`w${i}`)) }),
  ]);
  await h.clock.advance(3_000);
  t.is(h.status('uid-big').containerStatuses![0]!.state?.terminated?.message, 'b'.repeat(4096));
  const five = h.status('uid-five').containerStatuses!;
  t.is(five.length, 5);
  for (const s of five) t.is(s.state?.terminated?.message, s.name.slice(1).repeat(2457), s.name);
  await h.kubelet.stop();
});

test('FallbackToLogsOnError: a failed container with an empty file gets its last 80 lines, at most 2 KiB', async (t) => {
  const h = await startHarness();
  const lines = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
  h.runtime.script('lines', { exitAfterMs: 1000, exitCode: 2, stdout: lines });
  h.runtime.script('long', { exitAfterMs: 1000, exitCode: 2, stdout: `${'x'.repeat(3000)}\nlast\n` });
  h.runtime.script('ok', { exitAfterMs: 1000, exitCode: 0, stdout: 'fine\n' });
  h.runtime.script('file', {
    exitAfterMs: 1000,
    exitCode: 3,
    stdout: 'log\n',
    terminationMessage: 'from file',
  });
  h.runtime.script('policy', { exitAfterMs: 1000, exitCode: 1, stdout: 'not read\n' });
  const fallback = { terminationMessagePolicy: 'FallbackToLogsOnError' };
  h.source.set([
    makePod('fallback', {
      restartPolicy: 'Never',
      containers: [
        c('lines', fallback),
        c('long', fallback),
        c('ok', fallback),
        c('file', fallback),
        c('policy'),
      ],
    }),
  ]);
  await h.clock.advance(3_000);
  const by = (name: string) =>
    h.status('uid-fallback').containerStatuses!.find((s) => s.name === name)!.state?.terminated;
  const expected = Array.from({ length: 80 }, (_, i) => `line ${i + 21}`).join('\n') + '\n';
  t.is(by('lines')?.message, expected);
  const long = by('long')?.message ?? '';
  t.is(Buffer.byteLength(long), 2048);
  t.true(long.endsWith('x\nlast\n'));
  t.is(by('ok')?.message, undefined, 'exit 0: no fallback');
  t.is(by('file')?.message, 'from file', 'the file wins when it is not empty');
  t.is(by('policy')?.message, undefined, 'policy File: the log is not read');
  const ready = h.status('uid-fallback').conditions?.find((x) => x.type === 'ContainersReady');
  t.like(ready, { status: 'False', reason: 'PodFailed' }, 'a Failed pod: reason PodFailed, as upstream');
  await h.kubelet.stop();
});
