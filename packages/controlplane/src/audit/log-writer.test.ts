import test from 'ava';
import { Writable } from 'node:stream';
import { createLogger, MemorySink } from '@nodelet/kernel';
import type { AuditEvent } from './event.js';
import { AuditLogWriter } from './log-writer.js';

const event = (n: number): AuditEvent => ({
  kind: 'Event',
  apiVersion: 'audit.k8s.io/v1',
  level: 'Metadata',
  auditID: `id-${n}`,
  stage: 'ResponseComplete',
  requestURI: '/api/v1/pods',
  verb: 'list',
  user: { username: 'alice' },
  requestReceivedTimestamp: '2026-01-01T00:00:00.000000Z',
  stageTimestamp: '2026-01-01T00:00:00.001000Z',
});

test('a stalled output never holds the caller: past the bound, events are dropped, counted and logged', (t) => {
  const logs = new MemorySink();
  const written: string[] = [];
  // An output that accepts the first chunk and then never finishes writing (a hung disk or pipe).
  const stalled = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, callback) {
      written.push(chunk.toString());
      if (written.length === 1) callback();
    },
  });
  const writer = new AuditLogWriter(stalled, false, createLogger({ sink: logs.sink }), 4096);
  for (let i = 0; i < 1000; i++) writer.write(event(i)); // returns at once every time
  const kept = 1000 - writer.droppedEvents;
  t.true(kept > 1 && kept < 30, `${kept} events kept`);
  t.true(stalled.writableLength <= 4096 + 400, 'bounded memory');
  t.is(logs.find('audit log output is behind').length, 1);
  t.deepEqual(JSON.parse(written[0]!), event(0));
  t.true(written[0]!.endsWith('}\n'));
});

test('lines are JSON, one event each, in order', async (t) => {
  const lines: string[] = [];
  const out = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  const writer = new AuditLogWriter(out, true, createLogger({ sink: new MemorySink().sink }));
  for (let i = 0; i < 3; i++) writer.write(event(i));
  await writer.close();
  t.deepEqual(
    lines.map((l) => JSON.parse(l).auditID),
    ['id-0', 'id-1', 'id-2'],
  );
  writer.write(event(4)); // after close: ignored, no error
  t.is(lines.length, 3);
});
