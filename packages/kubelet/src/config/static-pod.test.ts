import test from 'ava';
import { applyPodDefaults, type Pod } from '@nodelet/api';
import { applyStaticPodDefaults, staticPodUid } from './static-pod.js';

const base = (): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
});

const file = {
  source: 'file' as const,
  origin: '/etc/kubernetes/manifests/web.yaml',
  nodeName: 'Node1',
  now: Date.UTC(2026, 0, 1),
};

test('static pod identity: name suffix, namespace, node, annotations, toleration', (t) => {
  const pod = applyStaticPodDefaults(base(), file);
  const m = pod.metadata!;
  t.is(m.name, 'web-node1');
  t.is(m.namespace, 'default');
  t.regex(m.uid!, /^[0-9a-f]{32}$/);
  t.deepEqual(m.annotations, {
    'kubernetes.io/config.hash': m.uid,
    'kubernetes.io/config.source': 'file',
    'kubernetes.io/config.seen': '2026-01-01T00:00:00.000Z',
  });
  t.is(pod.spec!.nodeName, 'Node1');
  t.deepEqual(pod.spec!.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }]);
  t.is(pod.status!.phase, 'Pending');
  t.is(pod.spec!.restartPolicy, 'Always', 'API defaults applied');
  t.is(pod.spec!.containers[0]!.imagePullPolicy, 'IfNotPresent');
  t.is(base().metadata!.name, 'web', 'input untouched');
});

test('the UID is stable for the same content, whatever the key order or the time', (t) => {
  const a = applyStaticPodDefaults(base(), file).metadata!.uid;
  const reordered: Pod = {
    spec: { containers: [{ image: 'nginx:1.27', name: 'web' }] },
    metadata: { labels: { app: 'web' }, name: 'web' },
    kind: 'Pod',
    apiVersion: 'v1',
  };
  t.is(applyStaticPodDefaults(reordered, { ...file, now: file.now + 60_000 }).metadata!.uid, a);
  // Writing a default out explicitly is the same content.
  const explicit = base();
  explicit.spec!.restartPolicy = 'Always';
  t.is(applyStaticPodDefaults(explicit, file).metadata!.uid, a);
});

test('the UID changes with the content, the file, the node', (t) => {
  const a = applyStaticPodDefaults(base(), file).metadata!.uid;
  const changed = base();
  changed.spec!.containers[0]!.image = 'nginx:1.28';
  t.not(applyStaticPodDefaults(changed, file).metadata!.uid, a);
  const annotated = base();
  annotated.metadata!.annotations = { owner: 'ops' };
  t.not(applyStaticPodDefaults(annotated, file).metadata!.uid, a);
  t.not(
    applyStaticPodDefaults(base(), { ...file, origin: '/etc/kubernetes/manifests/other.yaml' }).metadata!.uid,
    a,
  );
  t.not(applyStaticPodDefaults(base(), { ...file, nodeName: 'node2' }).metadata!.uid, a);
});

test('URL pods hash url:<url>, get source http, and no toleration', (t) => {
  const url = { source: 'http' as const, origin: 'http://127.0.0.1/pods', nodeName: 'node1', now: 0 };
  const pod = applyStaticPodDefaults(base(), url);
  t.is(pod.metadata!.annotations!['kubernetes.io/config.source'], 'http');
  t.is(pod.spec!.tolerations, undefined);
  // Independent of the node: the same URL gives every node the same UID.
  t.is(applyStaticPodDefaults(base(), { ...url, nodeName: 'node2' }).metadata!.uid, pod.metadata!.uid);
  t.is(pod.metadata!.uid, staticPodUid(applyPodDefaults(base()), url));
});

test('an explicit UID is kept; an existing NoExecute toleration is not doubled', (t) => {
  const pod = base();
  pod.metadata!.uid = 'fixed-uid';
  pod.spec!.tolerations = [{ operator: 'Exists', effect: 'NoExecute' }];
  const out = applyStaticPodDefaults(pod, file);
  t.is(out.metadata!.uid, 'fixed-uid');
  t.is(out.metadata!.annotations!['kubernetes.io/config.hash'], 'fixed-uid');
  t.is(out.spec!.tolerations!.length, 1);
});
