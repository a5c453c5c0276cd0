import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, MemorySink, RealClock } from '@nodelet/kernel';
import { stringify } from 'yaml';
import { FileSource, parseProxyObjects } from './file-source.js';
import type { ProxySourceHandler } from './source.js';
import { conformanceServices, conformanceSlices } from './testing/fixtures.js';

function recorder() {
  const events: string[] = [];
  const handler: ProxySourceHandler = {
    upsertService: (s) => events.push(`+svc ${s.metadata?.namespace}/${s.metadata?.name}`),
    deleteService: (s) => events.push(`-svc ${s.metadata?.namespace}/${s.metadata?.name}`),
    upsertEndpointSlice: (s) => events.push(`+eps ${s.metadata?.namespace}/${s.metadata?.name}`),
    deleteEndpointSlice: (s) => events.push(`-eps ${s.metadata?.namespace}/${s.metadata?.name}`),
    synced: () => events.push('synced'),
  };
  return { events, handler };
}

test('parses multi-document YAML and Lists; defaults the namespace; skips other kinds', (t) => {
  const text = [
    stringify({
      kind: 'Service',
      apiVersion: 'v1',
      metadata: { name: 'a' },
      spec: { clusterIP: '10.96.0.1' },
    }),
    stringify({ kind: 'List', items: conformanceSlices().slice(0, 2) }),
    stringify({ kind: 'ConfigMap', metadata: { name: 'x' } }),
  ].join('---\n');
  const { objects, ignored } = parseProxyObjects(text, 'f.yaml');
  t.is(objects.length, 3);
  t.is(objects[0]!.metadata?.namespace, 'default');
  t.deepEqual(ignored, ['document 3: kind "ConfigMap"']);
});

test('a directory of files: initial list then synced; edits and removals become upserts and deletes', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-proxy-src-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const sink = new MemorySink();
  await writeFile(
    join(dir, 'services.yaml'),
    conformanceServices()
      .slice(0, 2)
      .map((s) => stringify(s))
      .join('---\n'),
  );
  await writeFile(
    join(dir, 'slices.yaml'),
    stringify({ kind: 'List', items: conformanceSlices().slice(0, 2) }),
  );
  const source = new FileSource({
    path: dir,
    clock: new RealClock(),
    logger: createLogger({ sink: sink.sink }),
    watch: false,
  });
  const { events, handler } = recorder();
  await source.start(handler);
  t.deepEqual(events, [
    '+svc conformance/web',
    '+svc conformance/sticky',
    '+eps conformance/web-abcde',
    '+eps conformance/web-fghij',
    'synced',
  ]);
  events.length = 0;
  await writeFile(join(dir, 'services.yaml'), stringify(conformanceServices()[0]));
  await source.resync();
  t.deepEqual(events, ['-svc conformance/sticky']);
  events.length = 0;
  await writeFile(join(dir, 'slices.yaml'), 'kind: [unclosed');
  await source.resync();
  await source.resync();
  t.deepEqual(events, [], 'a broken file keeps what it defined');
  t.is(sink.lines('error').length, 1, 'and is reported once');
  t.regex(sink.lines('error')[0]!, /slices\.yaml: not valid YAML.*keeping what this file last defined/);
  source.stop();
});
