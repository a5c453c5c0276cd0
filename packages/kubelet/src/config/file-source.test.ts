import { mkdir, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { FileSource } from './file-source.js';
import { PodConfig } from './pod-config.js';
import { eventually, podYaml, tempDir, testEnv } from './test-env.js';

const names = (pods: Pod[]) => pods.map((p) => p.metadata!.name).sort();

function setup(path: string, extra: Partial<ConstructorParameters<typeof FileSource>[0]> = {}) {
  const env = testEnv();
  const source = new FileSource({
    path,
    nodeName: 'node1',
    clock: env.clock,
    logger: env.logger,
    bus: env.bus,
    ...extra,
  });
  const snapshots: Pod[][] = [];
  source.snapshots$.subscribe((s) => snapshots.push(s));
  return { ...env, source, snapshots };
}

test('reads every YAML/JSON file of the directory, several documents per file; ignores the rest', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  await writeFile(join(dir, 'web.yaml'), `${podYaml('web')}---\n${podYaml('web-sidecar')}`);
  await writeFile(
    join(dir, 'db.json'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'db' },
      spec: { containers: [{ name: 'db', image: 'postgres:16' }] },
    }),
  );
  await writeFile(join(dir, 'cache.yml'), podYaml('cache'));
  await writeFile(join(dir, '.hidden.yaml'), podYaml('hidden'));
  await writeFile(join(dir, 'notes.txt'), podYaml('notes'));
  await writeFile(join(dir, 'web.yaml.swp'), 'garbage: [');
  await mkdir(join(dir, 'sub.yaml'));

  const { source, snapshots, clock } = setup(dir);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length > 0, clock);
  t.deepEqual(names(snapshots[0]!), ['cache-node1', 'db-node1', 'web-node1', 'web-sidecar-node1']);
  t.is(source.originOf(snapshots[0]!.find((p) => p.metadata!.name === 'db-node1')!), join(dir, 'db.json'));
});

test('a malformed file: one log line naming it, other pods stay, its last good pods are kept, a fix is picked up', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  const web = join(dir, 'web.yaml');
  await writeFile(web, podYaml('web'));
  await writeFile(join(dir, 'db.yaml'), podYaml('db'));
  const { source, snapshots, clock, sink, events } = setup(dir);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  const firstUid = source.pods().find((p) => p.metadata!.name === 'web-node1')!.metadata!.uid;

  await writeFile(
    web,
    'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n   image: x\n',
  );
  await eventually(() => sink.find('rejected static pod manifest').length > 0, clock, { stepMs: 100 });
  const lines = sink.find('rejected static pod manifest');
  t.is(lines.length, 1);
  t.is(lines[0]!.level, 'warn');
  t.regex(
    lines[0]!.message,
    new RegExp(`${web.replace(/[.]/g, '\\.')}: not valid YAML \\(line \\d+, column \\d+\\)`),
  );
  t.regex(lines[0]!.message, /keeping the 1 pod\(s\) it last produced/);
  const rejected = events.filter((e) => e.type === '[Source] Manifest Rejected');
  t.is(rejected.length, 1);
  t.like(rejected[0], { source: 'file', origin: web });
  t.deepEqual(names(source.pods()), ['db-node1', 'web-node1'], 'nothing running is lost');

  // Re-lists and more events of the same bad content are not reported again.
  await clock.advance(20_000);
  await sleep(50);
  await source.resync();
  t.is(sink.find('rejected static pod manifest').length, 1);

  await writeFile(web, podYaml('web', '\n    args: [sleep, "3600"]'));
  await eventually(
    () => source.pods().some((p) => p.metadata!.name === 'web-node1' && p.metadata!.uid !== firstUid),
    clock,
    {
      stepMs: 100,
    },
  );
  t.deepEqual(names(source.pods()), ['db-node1', 'web-node1']);
  t.is(sink.find('accepted again').length, 1);
});

test('a bad new file contributes nothing and is reported once; the good files are unaffected', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  await writeFile(join(dir, 'db.yaml'), podYaml('db'));
  await writeFile(join(dir, 'web.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: { name: web }\nspec: {}\n');
  const { source, snapshots, clock, sink } = setup(dir);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  t.deepEqual(names(snapshots[0]!), ['db-node1']);
  const lines = sink.find('rejected static pod manifest');
  t.is(lines.length, 1);
  t.is(
    lines[0]!.message,
    `rejected static pod manifest: ${join(dir, 'web.yaml')}: pod "web": spec.containers: Required value; it has no pods running`,
  );
});

test('a manifest file larger than an object can be (1.5 MiB) is refused before it is read, naming its size; the others run', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  await writeFile(join(dir, 'db.yaml'), podYaml('db'));
  const huge = join(dir, 'huge.yaml');
  await writeFile(huge, podYaml('huge'));
  await truncate(huge, 50 * 1024 * 1024); // a sparse 50 MB file: nothing of it is read
  const { source, snapshots, clock, sink } = setup(dir);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  t.deepEqual(names(snapshots[0]!), ['db-node1']);
  const lines = sink.find('rejected static pod manifest');
  t.is(lines.length, 1);
  t.is(
    lines[0]!.message,
    `rejected static pod manifest: ${huge} is 52428800 bytes, larger than any object can be: the API server's request limit is 1.5 MiB (1572864 bytes); split it into smaller manifests; it has no pods running`,
  );
});

test('an unknown field rejects the file, naming the field', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  await writeFile(join(dir, 'web.yaml'), podYaml('web', '\n    imagePullPolcy: Always'));
  const { source, snapshots, clock, sink } = setup(dir);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  t.deepEqual(snapshots[0], []);
  t.regex(
    sink.lines('warn').join('\n'),
    /web\.yaml: pod "web": spec\.containers\[0\]\.imagePullPolcy: unknown field/,
  );
});

test('re-lists every 20 s under the virtual clock: a change without an fs event is picked up at the recheck', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  await writeFile(join(dir, 'web.yaml'), podYaml('web'));
  const { source, snapshots, clock } = setup(dir, { watch: false });
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);

  await writeFile(join(dir, 'db.yaml'), podYaml('db'));
  await clock.advance(19_900);
  await sleep(100);
  t.is(snapshots.length, 1, 'nothing before the recheck');
  await clock.advance(100);
  await eventually(() => snapshots.length === 2, clock);
  t.deepEqual(names(snapshots[1]!), ['db-node1', 'web-node1']);
  t.is(clock.elapsed(), 20_000);

  // Nothing changed: no new snapshot at the next recheck.
  await clock.advance(20_000);
  await sleep(100);
  await source.resync();
  t.is(snapshots.length, 2);
});

test('fs events trigger a re-read well before the recheck; removing a file removes its pods', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  await writeFile(join(dir, 'web.yaml'), podYaml('web'));
  const { source, snapshots, clock } = setup(dir);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);

  await writeFile(join(dir, 'db.yaml'), podYaml('db'));
  await eventually(() => snapshots.length === 2, clock, { stepMs: 50 });
  t.true(clock.elapsed() < 20_000, `picked up after ${clock.elapsed()} ms of virtual time`);
  t.deepEqual(names(snapshots[1]!), ['db-node1', 'web-node1']);

  await rm(join(dir, 'web.yaml'));
  await eventually(() => snapshots.length === 3, clock, { stepMs: 50 });
  t.deepEqual(names(snapshots[2]!), ['db-node1']);
});

test('a missing directory: one warning, an empty snapshot, and it is picked up once it exists', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  const manifests = join(dir, 'manifests');
  const { source, snapshots, clock, sink } = setup(manifests);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  t.deepEqual(snapshots[0], []);
  await clock.advance(40_000);
  await sleep(50);
  const warnings = sink.find('does not exist');
  t.is(warnings.length, 1);
  t.is(warnings[0]!.level, 'warn');

  await mkdir(manifests);
  await writeFile(join(manifests, 'web.yaml'), podYaml('web'));
  await eventually(() => snapshots.length === 2, clock, { stepMs: 1_000 });
  t.deepEqual(names(snapshots[1]!), ['web-node1']);
});

test('a single file path is read as the whole source', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  const file = join(dir, 'only.manifest');
  await writeFile(file, podYaml('web'));
  await writeFile(join(dir, 'other.yaml'), podYaml('other'));
  const { source, snapshots, clock } = setup(file);
  source.start();
  t.teardown(() => source.stop());
  await eventually(() => snapshots.length === 1, clock);
  t.deepEqual(names(snapshots[0]!), ['web-node1']);

  await writeFile(file, podYaml('web2'));
  await eventually(() => snapshots.length === 2, clock, { stepMs: 50 });
  t.deepEqual(names(snapshots[1]!), ['web2-node1']);
});

test('a duplicate pod name across files: one line naming both files, the first file keeps the name', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  await writeFile(join(dir, 'a.yaml'), podYaml('web'));
  await writeFile(join(dir, 'b.yaml'), podYaml('web', '\n    args: [other]'));
  const { source, clock, sink, bus, logger, events } = setup(dir);
  const config = new PodConfig({ bus, logger, clock });
  config.attach(source);
  t.teardown(() => config.stop());
  await eventually(() => config.seenAllSources(), clock);

  t.deepEqual(names(config.pods()), ['web-node1']);
  t.is(config.originOf(config.pods()[0]!.metadata!.uid!), join(dir, 'a.yaml'));
  const lines = sink.find('duplicate pod name');
  t.is(lines.length, 1);
  t.is(
    lines[0]!.message,
    `duplicate pod name "default/web-node1": already defined by ${join(dir, 'a.yaml')}; ignoring ${join(dir, 'b.yaml')}`,
  );
  t.is(events.filter((e) => e.type === '[Source] Manifest Rejected').length, 1);

  // Re-lists do not repeat it; removing a.yaml admits b.yaml's pod.
  await clock.advance(20_000);
  await sleep(50);
  t.is(sink.find('duplicate pod name').length, 1);
  await rm(join(dir, 'a.yaml'));
  await eventually(
    () => config.originOf(config.pods()[0]?.metadata?.uid ?? '') === join(dir, 'b.yaml'),
    clock,
    {
      stepMs: 50,
    },
  );
  t.deepEqual(names(config.pods()), ['web-node1']);
});

test('stop() releases the watcher and every timer', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.teardown(cleanup);
  await writeFile(join(dir, 'web.yaml'), podYaml('web'));
  const { source, snapshots, clock } = setup(dir);
  source.start();
  await eventually(() => snapshots.length === 1, clock);
  t.true(clock.pendingTimers() > 0);
  source.stop();
  t.is(clock.pendingTimers(), 0);
  await writeFile(join(dir, 'db.yaml'), podYaml('db'));
  await sleep(100);
  await clock.advance(60_000);
  t.is(snapshots.length, 1);
});
