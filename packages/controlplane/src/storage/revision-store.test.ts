import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RevisionStore, StoreError, type StoreEvent } from './revision-store.js';

async function withStore(run: (store: RevisionStore, path: string) => void | Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-store-'));
  const path = join(dir, 'state.db');
  const store = new RevisionStore(path);
  try {
    await run(store, path);
  } finally {
    store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const cm =
  (name: string, data: Record<string, string> = {}) =>
  () => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'default' },
    data,
  });

test('every write is a new revision, stamped as the resourceVersion', (t) =>
  withStore((store) => {
    const a = store.create('configmaps', 'default', 'a', cm('a'));
    const b = store.create('configmaps', 'default', 'b', cm('b'));
    const a2 = store.update('configmaps', 'default', 'a', (o) => ({ ...o, data: { x: '1' } }));
    t.deepEqual([a.rev, b.rev, a2.rev], [1, 2, 3]);
    t.is(a2.object.metadata.resourceVersion, '3');
    t.is(store.get('configmaps', 'default', 'a')!.object.data.x, '1');
    const gone = store.delete('configmaps', 'default', 'b');
    t.is(gone.rev, 4);
    t.is(gone.object.metadata.resourceVersion, '4');
    t.is(store.get('configmaps', 'default', 'b'), undefined);
    t.is(store.revision, 4);
  }));

test('create of an existing key, update of a missing one and a stale revision are refused', (t) =>
  withStore((store) => {
    store.create('configmaps', 'default', 'a', cm('a'));
    t.is(
      t.throws(() => store.create('configmaps', 'default', 'a', cm('a')), { instanceOf: StoreError })!.code,
      'AlreadyExists',
    );
    t.is(
      t.throws(() => store.update('configmaps', 'default', 'zz', (o) => o), { instanceOf: StoreError })!.code,
      'NotFound',
    );
    store.update('configmaps', 'default', 'a', (o) => o);
    t.is(
      t.throws(() => store.update('configmaps', 'default', 'a', (o) => o, 1), { instanceOf: StoreError })!
        .code,
      'Conflict',
    );
  }));

test('lists page in key order and read history at an exact revision', (t) =>
  withStore((store) => {
    for (const n of ['c', 'a', 'b']) store.create('configmaps', 'default', n, cm(n, { v: '1' }));
    store.create('configmaps', 'other', 'a', () => ({ metadata: { name: 'a', namespace: 'other' } }));
    const at = store.revision;
    store.update('configmaps', 'default', 'a', (o) => ({ ...o, data: { v: '2' } }));
    store.delete('configmaps', 'default', 'b');
    const now = store
      .list('configmaps', 'default')
      .items.map((i) => `${i.object.metadata.name}=${i.object.data.v}`);
    t.deepEqual(now, ['a=2', 'c=1']);
    const then = store
      .list('configmaps', 'default', { atRevision: at })
      .items.map((i) => `${i.object.metadata.name}=${i.object.data.v}`);
    t.deepEqual(then, ['a=1', 'b=1', 'c=1']);
    const page1 = store.list('configmaps', undefined, { limit: 2 });
    t.deepEqual(
      page1.items.map((i) => `${i.object.metadata.namespace}/${i.object.metadata.name}`),
      ['default/a', 'default/c'],
    );
    const page2 = store.list('configmaps', undefined, { limit: 2, after: page1.next! });
    t.deepEqual(
      page2.items.map((i) => `${i.object.metadata.namespace}/${i.object.metadata.name}`),
      ['other/a'],
    );
    t.is(store.count('configmaps'), 3);
  }));

test('compaction folds history: old revisions are gone (Compacted), state and later history remain', (t) =>
  withStore((store) => {
    store.create('configmaps', 'default', 'a', cm('a', { v: '1' }));
    store.update('configmaps', 'default', 'a', (o) => ({ ...o, data: { v: '2' } }));
    store.create('configmaps', 'default', 'b', cm('b'));
    store.delete('configmaps', 'default', 'b');
    const compactAt = store.revision;
    store.update('configmaps', 'default', 'a', (o) => ({ ...o, data: { v: '3' } }));
    const before = store.logSize();
    const removed = store.compact(compactAt);
    t.is(removed, 3); // a@1 (superseded), b@3 (superseded by its deletion), the deletion b@4
    t.is(store.logSize(), before - 3);
    t.is(store.compactRevision, compactAt);
    t.is(t.throws(() => store.eventsSince('configmaps', 1), { instanceOf: StoreError })!.code, 'Compacted');
    const events = store.eventsSince('configmaps', compactAt);
    t.deepEqual(
      events.map((e) => [e.op, e.object.data.v, e.prev?.data.v]),
      [['update', '3', '2']],
    );
    t.deepEqual(
      store.list('configmaps', 'default', { atRevision: compactAt }).items.map((i) => i.object.data.v),
      ['2'],
    );
    t.deepEqual(
      store.listAll('configmaps').map((i) => i.object.data.v),
      ['3'],
    );
  }));

test('subscribers see each committed write once, in order, with the previous object', (t) =>
  withStore((store) => {
    const seen: StoreEvent[] = [];
    const stop = store.subscribe('configmaps', (e) => seen.push(e));
    store.create('configmaps', 'default', 'a', cm('a', { v: '1' }));
    store.update('configmaps', 'default', 'a', (o) => ({ ...o, data: { v: '2' } }));
    store.delete('configmaps', 'default', 'a');
    stop();
    store.create('configmaps', 'default', 'b', cm('b'));
    t.deepEqual(
      seen.map((e) => [e.op, e.rev, e.object.data?.v, e.prev?.data?.v]),
      [
        ['create', 1, '1', undefined],
        ['update', 2, '2', '1'],
        ['delete', 3, '2', '2'],
      ],
    );
    t.is(JSON.parse(seen[2]!.json).metadata.resourceVersion, '3');
  }));

test('a reopened store keeps objects, revisions and the compaction point', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-store-'));
  const path = join(dir, 'state.db');
  try {
    const first = new RevisionStore(path);
    first.create('configmaps', 'default', 'a', cm('a'));
    first.create('configmaps', 'default', 'b', cm('b'));
    first.delete('configmaps', 'default', 'b');
    first.compact(first.revision);
    first.close();
    const second = new RevisionStore(path);
    t.is(second.revision, 3);
    t.is(second.compactRevision, 3);
    t.is(second.get('configmaps', 'default', 'a')!.object.metadata.resourceVersion, '1');
    // The next write continues the sequence even though the newest row was compacted away.
    t.is(second.create('configmaps', 'default', 'c', cm('c')).rev, 4);
    second.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
