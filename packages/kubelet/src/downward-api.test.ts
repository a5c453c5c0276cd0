import test from 'ava';
import type { Pod } from '@nodelet/api';
import type { PodFacts } from '@nodelet/volume';
import { goQuote } from '@nodelet/api';
import { containerResourceValue, formatMap, podFieldValue } from './downward-api.js';

const pod: Pod = {
  metadata: {
    name: 'p',
    namespace: 'ns',
    uid: 'u-1',
    labels: { zone: 'us-est-coast', cluster: 'test-cluster1', rack: 'rack-22' },
    annotations: { build: 'two', builder: 'john-doe' },
  },
  spec: {
    serviceAccountName: 'sa',
    containers: [
      {
        name: 'c',
        image: 'busybox',
        resources: { requests: { cpu: '250m', memory: '32Mi' }, limits: { memory: '64Mi' } },
      },
    ],
  },
};
const facts: PodFacts = {
  nodeName: 'node-a',
  hostIPs: ['10.0.0.1', 'fd00::1'],
  podIPs: ['10.88.0.5', 'fd00::5'],
  allocatable: { cpu: '2', memory: '8Gi', 'ephemeral-storage': '100Gi' },
};

test('env fields read the pod and what the kubelet knows of it', (t) => {
  const cases: [string, string][] = [
    ['metadata.name', 'p'],
    ['metadata.namespace', 'ns'],
    ['metadata.uid', 'u-1'],
    ["metadata.labels['zone']", 'us-est-coast'],
    ["metadata.annotations['builder']", 'john-doe'],
    ["metadata.labels['missing']", ''],
    ['spec.nodeName', 'node-a'],
    ['spec.serviceAccountName', 'sa'],
    ['status.hostIP', '10.0.0.1'],
    ['status.hostIPs', '10.0.0.1,fd00::1'],
    ['status.podIP', '10.88.0.5'],
    ['status.podIPs', '10.88.0.5,fd00::5'],
  ];
  for (const [path, want] of cases) t.is(podFieldValue(pod, path, facts, 'env'), want, path);
  t.throws(() => podFieldValue(pod, 'metadata.labels', facts, 'env'), {
    message: /not supported in an env var/,
  });
});

test('volume files hold whole label and annotation maps as upstream formats them, and refuse status fields', (t) => {
  // The example of the Kubernetes docs' "Expose Pod Information to Containers Through Files".
  t.is(
    podFieldValue(pod, 'metadata.labels', facts, 'volume'),
    'cluster="test-cluster1"\nrack="rack-22"\nzone="us-est-coast"',
  );
  t.is(podFieldValue(pod, 'metadata.annotations', facts, 'volume'), 'build="two"\nbuilder="john-doe"');
  t.throws(() => podFieldValue(pod, 'status.podIP', facts, 'volume'), {
    message: /status\.podIP.*downwardAPI volume/,
  });
  t.is(formatMap(undefined), '');
});

test('values are quoted as Go %q quotes them', (t) => {
  t.is(goQuote('a"b\\c'), '"a\\"b\\\\c"');
  t.is(goQuote('line\nnext\ttab'), '"line\\nnext\\ttab"');
  t.is(goQuote('\x00\x7f'), '"\\x00\\x7f"');
  t.is(goQuote('héllo 日本'), '"héllo 日本"');
  t.is(goQuote('\u2028'), '"\\u2028"');
});

test('resourceFieldRef divides and rounds up; unset limits are the node allocatable', (t) => {
  const cases: [string, string | undefined, string][] = [
    ['requests.cpu', undefined, '1'], // 250m rounded up to whole cores
    ['requests.cpu', '1m', '250'],
    ['limits.cpu', undefined, '2'], // allocatable
    ['limits.cpu', '1m', '2000'],
    ['requests.memory', undefined, String(32 * 2 ** 20)],
    ['requests.memory', '1Mi', '32'],
    ['limits.memory', '1Mi', '64'],
    ['limits.memory', '1Gi', '1'],
    ['limits.ephemeral-storage', '1Gi', '100'],
    ['requests.ephemeral-storage', undefined, '0'],
  ];
  for (const [resource, divisor, want] of cases) {
    t.is(
      containerResourceValue(pod, 'c', resource, divisor, facts.allocatable),
      want,
      `${resource} / ${divisor}`,
    );
  }
  t.throws(() => containerResourceValue(pod, 'c', 'limits.gpu', undefined, facts.allocatable), {
    message: /resource "limits.gpu" is not supported/,
  });
  t.throws(() => containerResourceValue(pod, 'x', 'limits.cpu', undefined, facts.allocatable), {
    message: /no container "x"/,
  });
  t.throws(() => containerResourceValue(pod, 'c', 'limits.cpu', '0', facts.allocatable), {
    message: /must be positive/,
  });
});
