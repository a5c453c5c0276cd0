import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, EventBus, MemorySink, VirtualClock } from '@nodelet/kernel';
import { httpFuzzCases, sendRaw } from '@nodelet/kernel/testing';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { Kubelet } from './kubelet.js';
import { ReadOnlyServer } from './server.js';
import { TestSource } from './test-harness.js';

// Requests that once ended the process; replayed on every run before the random ones.
const crashCorpus = ['GET /pods/%ff/%ff/events HTTP/1.1', 'GET /containerLogs/%ff/x/y HTTP/1.1'];

test('10,000 random and mutated requests: the read-only server never dies, never answers 5xx, every 4xx has a message', async (t) => {
  const clock = new VirtualClock();
  const logger = createLogger({ sink: new MemorySink().sink });
  const runtime = new FakeRuntime({ clock, logger });
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-fuzz-'));
  const kubelet = new Kubelet(
    { runtime, images: runtime, bus: new EventBus(clock, logger), clock, logger },
    {
      nodeName: 'node1',
      hostIP: '192.0.2.10',
      rootDir: join(dir, 'root'),
      podLogsDir: join(dir, 'logs'),
      sources: [new TestSource()],
    },
  );
  await kubelet.start();
  const server = new ReadOnlyServer(kubelet, logger);
  const { port } = await server.listen(0);
  t.teardown(async () => {
    await server.close();
    await kubelet.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = (bytes: Buffer) => sendRaw(connect(port, '127.0.0.1'), bytes, 500);
  for (const line of crashCorpus) {
    const answer = await send(Buffer.from(`${line}\r\nHost: x\r\n\r\n`));
    t.is(answer.status, 400, line);
  }
  const statuses = new Map<number | undefined, number>();
  const failures: string[] = [];
  const cases = [
    ...httpFuzzCases(10_000, {
      seed: 20,
      paths: [
        '/healthz',
        '/pods',
        '/pods/default/p/events',
        '/containerLogs/default/p/c?follow=true',
        '/spec/',
      ],
      params: ['follow', 'previous', 'tailLines', 'limitBytes', 'sinceSeconds', 'sinceTime', 'timestamps'],
    }),
  ];
  const concurrency = 8;
  for (let i = 0; i < cases.length; i += concurrency) {
    const batch = cases.slice(i, i + concurrency);
    const answers = await Promise.all(batch.map((c) => send(c.bytes)));
    answers.forEach((a, j) => {
      statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      const name = batch[j]!.name;
      if (a.status !== undefined && a.status >= 500) failures.push(`${name}: ${a.status} ${a.body}`);
      if (a.status !== undefined && a.status >= 400 && !batch[j]!.head && a.body.trim() === '')
        failures.push(`${name}: ${a.status} without a message`);
    });
  }
  t.deepEqual(failures.slice(0, 20), [], `${failures.length} bad answers`);
  t.log([...statuses].map(([s, n]) => `${s ?? 'none'}: ${n}`).join(', '));
  t.is((await send(Buffer.from('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'))).status, 200);
});
