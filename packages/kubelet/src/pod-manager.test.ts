import test from 'ava';
import { ConfigSourceAnnotation, type Pod } from '@nodelet/api';
import { PodManager } from './pod-manager.js';

const pod = (name: string, source = 'file', extra: Partial<NonNullable<Pod['metadata']>> = {}): Pod => ({
  metadata: {
    name,
    namespace: 'default',
    uid: `uid-${name}`,
    annotations: { [ConfigSourceAnnotation]: source },
    ...extra,
  },
  spec: { containers: [], terminationGracePeriodSeconds: 5 },
});

test('desired, removed (terminating, listed with its deletion time) and terminated pods', (t) => {
  const m = new PodManager();
  m.set(pod('a'));
  m.set(pod('b'));
  const { pod: known, wasFinished } = m.remove(pod('b'));
  t.false(wasFinished);
  m.markTerminating(known, Date.UTC(2026, 0, 1));
  m.markTerminating(known, Date.UTC(2026, 0, 2)); // a second removal does not move it
  t.deepEqual(
    m
      .listed()
      .map(([uid, p]) => [uid, p.metadata?.deletionTimestamp, p.metadata?.deletionGracePeriodSeconds]),
    [
      ['uid-a', undefined, undefined],
      ['uid-b', '2026-01-01T00:00:00Z', 5],
    ],
  );
  t.false(m.has('uid-b'));
  t.is(m.find('default', 'b')?.metadata?.uid, 'uid-b');
  m.terminated('uid-b');
  t.deepEqual(
    m.listed().map(([uid]) => uid),
    ['uid-a'],
  );
});

test('a rejected pod is listed and finished until its source removes it; an API deletion finishes a pod', (t) => {
  const m = new PodManager();
  m.reject(pod('big'));
  t.true(m.isFinished('uid-big'));
  t.false(m.has('uid-big'));
  t.deepEqual(
    m.listed().map(([uid]) => uid),
    ['uid-big'],
  );
  t.true(m.remove(pod('big')).wasFinished);
  t.deepEqual(m.listed(), []);

  m.set(pod('deleted', 'api', { deletionTimestamp: '2026-01-01T00:00:00Z' }));
  m.terminated('uid-deleted');
  t.true(m.isFinished('uid-deleted'), 'an API pod deleted and terminated never starts again');
  t.false(m.has('uid-deleted'));
});

test('static ⇄ mirror pods by full name', (t) => {
  const m = new PodManager();
  const staticPod = pod('web-node1');
  const mirror = pod('web-node1', 'api', { uid: 'mirror-uid' });
  m.set(staticPod);
  m.setMirrorPods(() => new Map([['default/web-node1', mirror]]));
  t.is(m.mirrorPodOf(staticPod), mirror);
  t.is(m.staticPodOf(mirror), staticPod);
  t.is(m.mirrorPodOf(pod('other', 'api')), undefined, 'an API pod has no mirror');
});
