import test from 'ava';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch } from './patch.js';
import { matchFields, matchLabels, parseFieldSelector, parseLabelSelector } from './selectors.js';

const pod = () => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', labels: { a: '1', b: '2' }, finalizers: ['x'] },
  spec: {
    containers: [
      { name: 'app', image: 'app:1', env: [{ name: 'A', value: '1' }], ports: [{ containerPort: 80 }] },
      { name: 'side', image: 'side:1' },
    ],
    volumes: [{ name: 'data', emptyDir: {} }],
    tolerations: [{ key: 't', operator: 'Exists' }],
  },
});

test('strategic merge: containers merge by name, env by name, ports by containerPort', (t) => {
  const out = applyStrategicMergePatch(
    pod(),
    {
      spec: {
        containers: [
          {
            name: 'app',
            image: 'app:2',
            env: [{ name: 'B', value: '2' }],
            ports: [{ containerPort: 80, name: 'http' }],
          },
        ],
      },
    },
    'V1Pod',
  );
  t.is(out.spec.containers.length, 2);
  t.is(out.spec.containers[0].image, 'app:2');
  t.deepEqual(out.spec.containers[0].env, [
    { name: 'A', value: '1' },
    { name: 'B', value: '2' },
  ]);
  t.deepEqual(out.spec.containers[0].ports, [{ containerPort: 80, name: 'http' }]);
  t.is(out.spec.containers[1].name, 'side');
});

test('strategic merge: atomic lists are replaced, null deletes, $patch: delete removes an element', (t) => {
  const out = applyStrategicMergePatch(
    pod(),
    {
      metadata: { labels: { b: null, c: '3' } },
      spec: {
        tolerations: [{ key: 'u', operator: 'Exists' }],
        containers: [{ name: 'side', $patch: 'delete' }],
      },
    },
    'V1Pod',
  );
  t.deepEqual(out.metadata.labels, { a: '1', c: '3' });
  t.deepEqual(out.spec.tolerations, [{ key: 'u', operator: 'Exists' }]);
  t.deepEqual(
    out.spec.containers.map((c: { name: string }) => c.name),
    ['app'],
  );
});

test('strategic merge: kubectl apply directives ($setElementOrder, $retainKeys, $deleteFromPrimitiveList)', (t) => {
  const out = applyStrategicMergePatch(
    pod(),
    {
      metadata: { finalizers: ['y'], '$deleteFromPrimitiveList/finalizers': ['x'] },
      spec: {
        '$setElementOrder/containers': [{ name: 'side' }, { name: 'app' }],
        volumes: [{ name: 'data', $retainKeys: ['hostPath', 'name'], hostPath: { path: '/tmp' } }],
        '$setElementOrder/volumes': [{ name: 'data' }],
      },
    },
    'V1Pod',
  );
  t.deepEqual(out.metadata.finalizers, ['y']);
  t.deepEqual(
    out.spec.containers.map((c: { name: string }) => c.name),
    ['side', 'app'],
  );
  t.deepEqual(out.spec.volumes, [{ name: 'data', hostPath: { path: '/tmp' } }]);
});

test('strategic merge: $patch: replace replaces a map or a list', (t) => {
  const out = applyStrategicMergePatch(
    pod(),
    {
      metadata: { labels: { $patch: 'replace', z: '9' } },
      spec: { containers: [{ $patch: 'replace' }, { name: 'only', image: 'o' }] },
    },
    'V1Pod',
  );
  t.deepEqual(out.metadata.labels, { z: '9' });
  t.deepEqual(out.spec.containers, [{ name: 'only', image: 'o' }]);
});

test('merge patch (RFC 7386) replaces lists and deletes on null', (t) => {
  const out = applyMergePatch(pod(), {
    metadata: { labels: { a: null } },
    spec: { containers: [{ name: 'x', image: 'x' }] },
  });
  t.deepEqual(out.metadata.labels, { b: '2' });
  t.deepEqual(out.spec.containers, [{ name: 'x', image: 'x' }]);
});

test('JSON patch (RFC 6902) applies operations and fails a failed test with 422', (t) => {
  const out = applyJsonPatch(pod(), [
    { op: 'replace', path: '/spec/containers/0/image', value: 'app:3' },
    { op: 'add', path: '/metadata/labels/new', value: 'yes' },
  ]);
  t.is(out.spec.containers[0].image, 'app:3');
  t.is(out.metadata.labels.new, 'yes');
  const err = t.throws(() =>
    applyJsonPatch(pod(), [{ op: 'test', path: '/metadata/name', value: 'other' }]),
  ) as unknown as { code: number };
  t.is(err.code, 422);
});

test('label selectors: equality, sets, existence and numeric comparison', (t) => {
  const labels = { env: 'prod', tier: 'web', replicas: '3' };
  const yes = [
    'env=prod',
    'env==prod,tier!=db',
    'env in (prod, staging)',
    'tier notin (db)',
    'env',
    '!missing',
    'replicas>2',
    'replicas<4',
  ];
  const no = ['env=dev', 'tier in (db)', 'missing', '!env', 'replicas>3', 'env notin (prod)'];
  for (const s of yes) t.true(matchLabels(parseLabelSelector(s), labels), s);
  for (const s of no) t.false(matchLabels(parseLabelSelector(s), labels), s);
  t.throws(() => parseLabelSelector('a in ('));
});

test('field selectors: = and != with escapes', (t) => {
  const fields: Record<string, string> = {
    'spec.nodeName': 'node-1',
    'status.phase': 'Running',
    'metadata.name': 'a,b',
  };
  const get = (f: string) => fields[f];
  t.true(matchFields(parseFieldSelector('spec.nodeName=node-1,status.phase!=Failed'), get));
  t.false(matchFields(parseFieldSelector('spec.nodeName==node-2'), get));
  t.true(matchFields(parseFieldSelector('metadata.name=a\\,b'), get));
});
