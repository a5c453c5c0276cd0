import test from 'ava';
import type { Pod } from '@nodelet/api';
import { parseManifests } from './manifest.js';
import { applyStaticPodDefaults } from './static-pod.js';
import { podYaml } from './test-env.js';

const origin = 'examples/manifests/web.yaml';

test('several documents per file, a PodList among them; empty documents are skipped', (t) => {
  const text = `${podYaml('web')}---
${podYaml('db')}---
apiVersion: v1
kind: PodList
items:
- metadata: { name: cache }
  spec: { containers: [{ name: c, image: redis:7 }] }
- apiVersion: v1
  kind: Pod
  metadata: { name: queue }
  spec: { containers: [{ name: q, image: rabbitmq:3 }] }
---
`;
  const { pods, errors } = parseManifests(text, origin);
  t.deepEqual(errors, []);
  t.deepEqual(
    pods.map((p) => p.metadata!.name),
    ['web', 'db', 'cache', 'queue'],
  );
});

test('JSON is read too', (t) => {
  const json = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web' },
    spec: { containers: [{ name: 'web', image: 'nginx' }] },
  });
  const { pods, errors } = parseManifests(json, 'web.json');
  t.deepEqual(errors, []);
  t.is(pods[0]!.spec!.containers[0]!.image, 'nginx');
});

test('malformed YAML: the error names the origin, line and column', (t) => {
  const text = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: web
   image: nginx
`;
  const { pods, errors } = parseManifests(text, origin);
  t.deepEqual(pods, []);
  t.is(errors.length, 1);
  t.regex(errors[0]!, /^examples\/manifests\/web\.yaml: not valid YAML \(line \d+, column \d+\): /);
});

test('duplicate keys are a YAML error, as in strict decoding', (t) => {
  const { errors } = parseManifests(`${podYaml('web')}metadata:\n  name: other\n`, origin);
  t.regex(errors[0]!, /not valid YAML \(line 9, column 1\): Map keys must be unique/);
});

test('a document that is not a v1 Pod or PodList is refused, naming origin and document', (t) => {
  const text = `${podYaml('web')}---
apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
---
- just
- a list
`;
  const { pods, errors } = parseManifests(text, origin);
  t.deepEqual(errors, [
    `${origin}: document 2: expected apiVersion "v1" and kind "Pod" or "PodList", got apiVersion "apps/v1" and kind "Deployment"`,
    `${origin}: document 3: expected a Pod or PodList object, got a list`,
  ]);
  t.is(pods.length, 1, 'the good document is still listed');
  t.deepEqual(parseManifests('metadata: { name: x }\n', origin).errors, [
    `${origin}: document 1: expected apiVersion "v1" and kind "Pod" or "PodList", got no apiVersion and no kind`,
  ]);
});

test('a Pod without containers is refused with the API server message', (t) => {
  const { pods, errors } = parseManifests(
    'apiVersion: v1\nkind: Pod\nmetadata: { name: web }\nspec: {}\n',
    origin,
  );
  t.deepEqual(pods, []);
  t.deepEqual(errors, [`${origin}: pod "web": spec.containers: Required value`]);
});

test('an unknown field is an error naming origin, pod and field', (t) => {
  const text = podYaml('web', '\n    imagePullPolcy: Always');
  const { pods, errors } = parseManifests(text, origin);
  t.deepEqual(pods, []);
  t.deepEqual(errors, [`${origin}: pod "web": spec.containers[0].imagePullPolcy: unknown field`]);
});

test('validation runs on the defaulted pod, and errors use the manifest name', (t) => {
  const defaults = (pod: Pod) =>
    applyStaticPodDefaults(pod, { source: 'file', origin, nodeName: 'node1', now: 0 });
  const ok = parseManifests(podYaml('web'), origin, { defaults });
  t.deepEqual(ok.errors, []);
  t.is(ok.pods[0]!.metadata!.name, 'web-node1');
  t.is(ok.pods[0]!.spec!.restartPolicy, 'Always');

  const bad = parseManifests(podYaml('web', '\n    ports: [{ containerPort: 0 }]'), origin, { defaults });
  t.deepEqual(bad.errors, [
    `${origin}: pod "web": spec.containers[0].ports[0].containerPort: Required value`,
  ]);

  const unnamed = parseManifests(
    `${podYaml('web')}---\napiVersion: v1\nkind: Pod\nspec: { containers: [{ name: a, image: b }] }\n`,
    origin,
    {
      defaults,
    },
  );
  t.deepEqual(unnamed.errors, [
    `${origin}: document 2: metadata.name: Required value: name or generateName is required`,
  ]);
});
