import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { Pod } from '@nodelet/api';
import { podWith, volumeEnv } from './test-volumes.js';

// The pod of the Kubernetes docs' "Expose Pod Information to Containers Through Files".
const docsPod = (labels: Record<string, string>): Pod => {
  const pod = podWith(
    [
      {
        name: 'podinfo',
        downwardAPI: {
          items: [
            { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
            { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
            { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
            { path: 'zone', fieldRef: { fieldPath: "metadata.labels['zone']" } },
            {
              path: 'cpu_limit',
              resourceFieldRef: { containerName: 'c', resource: 'limits.cpu', divisor: '1m' },
            },
            {
              path: 'mem_request',
              resourceFieldRef: { containerName: 'c', resource: 'requests.memory', divisor: '1Mi' },
            },
          ],
        },
      },
    ],
    { containers: [{ name: 'c', image: 'busybox', resources: { requests: { memory: '32Mi' } } }] },
  );
  pod.metadata = { ...pod.metadata, labels, annotations: { build: 'two', builder: 'john-doe' } };
  return pod;
};

test('downwardAPI: labels and annotations as upstream formats them, one field, resources (a limit not set is the node’s allocatable)', async (t) => {
  const { volumes } = volumeEnv(t);
  const dir = (
    await volumes.setUp(docsPod({ zone: 'us-est-coast', cluster: 'test-cluster1', rack: 'rack-22' }))
  ).get('podinfo')!;
  t.true(dir.endsWith('/volumes/kubernetes.io~downward-api/podinfo'));
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  t.is(read('labels'), 'cluster="test-cluster1"\nrack="rack-22"\nzone="us-est-coast"');
  t.is(read('annotations'), 'build="two"\nbuilder="john-doe"');
  t.is(read('name'), 'p');
  t.is(read('zone'), 'us-est-coast');
  t.is(read('cpu_limit'), '2000', 'allocatable cpu 2 in millicores');
  t.is(read('mem_request'), '32');
  t.is(statSync(join(dir, 'labels')).mode & 0o777, 0o644);
});

test('downwardAPI: the labels file follows the pod’s labels on the next sync', async (t) => {
  const { volumes } = volumeEnv(t);
  const dir = (await volumes.setUp(docsPod({ zone: 'a' }))).get('podinfo')!;
  t.is(readFileSync(join(dir, 'labels'), 'utf8'), 'zone="a"');
  await volumes.setUp(docsPod({ zone: 'b', tier: 'web' }));
  t.is(readFileSync(join(dir, 'labels'), 'utf8'), 'tier="web"\nzone="b"');
});

test('downwardAPI: fields a volume may not read, and a bad item, are refused together, naming them', async (t) => {
  const { volumes } = volumeEnv(t);
  const pod = podWith([
    {
      name: 'info',
      downwardAPI: {
        items: [
          { path: 'ip', fieldRef: { fieldPath: 'status.podIP' } },
          { path: '../x', fieldRef: { fieldPath: 'metadata.name' } },
          { path: 'mem', resourceFieldRef: { resource: 'limits.memory' } },
        ],
      },
    },
  ]);
  const err = await t.throwsAsync(volumes.setUp(pod));
  t.is(
    err?.message,
    'volume "info": [fieldPath "status.podIP" is not supported in a downwardAPI volume (supported: metadata.name, ' +
      "metadata.namespace, metadata.uid, metadata.labels['<key>'], metadata.annotations['<key>'], metadata.labels, " +
      "metadata.annotations), downwardAPI.items[1].path: invalid path: must not contain '..': ../x, " +
      'downwardAPI.items[2].resourceFieldRef.containerName: Required value]',
  );
});
