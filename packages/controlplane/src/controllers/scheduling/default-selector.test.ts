import test from 'ava';
import type { KubeObject } from '../../object.js';
import { defaultSpreadSelector } from './default-selector.js';
import { makePod } from './test-scheduling.js';

test('the default spread selector: every Service and ReplicaSet of the namespace that selects the pod', (t) => {
  const objects: Record<string, KubeObject[]> = {
    services: [
      { metadata: { name: 'web' }, spec: { selector: { app: 'web' } } },
      { metadata: { name: 'db' }, spec: { selector: { app: 'db' } } },
      { metadata: { name: 'headless' }, spec: {} },
    ] as KubeObject[],
    replicasets: [
      {
        metadata: { name: 'web-1' },
        spec: { selector: { matchLabels: { app: 'web', 'pod-template-hash': '1' } } },
      },
      {
        metadata: { name: 'web-2' },
        spec: { selector: { matchLabels: { app: 'web', 'pod-template-hash': '2' } } },
      },
    ] as KubeObject[],
  };
  const list = (resource: string) => objects[resource] ?? [];
  const pod = makePod('p', { labels: { app: 'web', 'pod-template-hash': '1' } });
  t.deepEqual(defaultSpreadSelector(pod, list), [
    { key: 'app', op: '=', values: ['web'] },
    { key: 'app', op: '=', values: ['web'] },
    { key: 'pod-template-hash', op: '=', values: ['1'] },
  ]);
  t.is(defaultSpreadSelector(makePod('q', { labels: { app: 'cache' } }), list), undefined);
});
