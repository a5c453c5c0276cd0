import test from 'ava';
import type { Pod } from '@nodelet/api';
import { localStorageViolation } from './local-storage.js';
import { Mi, pod, stats } from './test-pods.js';

// Upstream's localStorageEviction cases (TestLocalStorageEviction…): which limit a pod exceeds, in
// upstream's order, and the message its status then carries.

const withSizeLimit = (p: Pod, sizeLimit: string): Pod => ({
  ...p,
  spec: { ...p.spec!, volumes: p.spec!.volumes!.map((v) => ({ ...v, emptyDir: { sizeLimit } })) },
});

const cases: [
  name: string,
  pod: Pod,
  usage: Parameters<typeof stats>[1],
  dedicatedImageFs: boolean,
  expected: string | undefined,
][] = [
  ['no limits', pod('p', { volumes: ['scratch'] }), { volumes: { scratch: Mi } }, false, undefined],
  [
    'an emptyDir above its sizeLimit',
    withSizeLimit(pod('p', { volumes: ['scratch'] }), '1Mi'),
    { volumes: { scratch: 2 * Mi } },
    false,
    'emptydirfs.limit: Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ',
  ],
  [
    'an emptyDir at its sizeLimit',
    withSizeLimit(pod('p', { volumes: ['scratch'] }), '1Mi'),
    { volumes: { scratch: Mi } },
    false,
    undefined,
  ],
  [
    'the pod above its containers’ limits: volumes, logs and layers together',
    pod('p', { volumes: ['scratch'], limits: { 'ephemeral-storage': '2Mi' } }),
    { volumes: { scratch: Mi }, logs: Mi / 2, rootfs: Mi },
    false,
    'ephemeralpodfs.limit: Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ',
  ],
  [
    'with an image file system of its own, the layers do not count',
    pod('p', { volumes: ['scratch'], limits: { 'ephemeral-storage': '2Mi' } }),
    { volumes: { scratch: Mi }, logs: Mi / 2, rootfs: 10 * Mi },
    true,
    undefined,
  ],
  [
    'a container above its own limit (its layer and logs)',
    pod('p', { limits: { 'ephemeral-storage': '1Mi' } }),
    { logs: 0, rootfs: 2 * Mi },
    false,
    // Its layer is also all the pod uses: the pod's limit is met first, as upstream checks it first.
    'ephemeralpodfs.limit: Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. ',
  ],
];

for (const [name, p, usage, dedicated, expected] of cases) {
  test(`localStorageViolation: ${name}`, (t) => {
    const v = localStorageViolation(p, stats(p, usage), dedicated);
    t.is(v ? `${v.signal}: ${v.message}` : undefined, expected);
  });
}

test('localStorageViolation: a container over its limit while the pod is within the sum', (t) => {
  const p: Pod = {
    ...pod('p'),
    spec: {
      containers: [
        { name: 'main', image: 'busybox', resources: { limits: { 'ephemeral-storage': '1Mi' } } },
        { name: 'side', image: 'busybox', resources: { limits: { 'ephemeral-storage': '10Mi' } } },
      ],
    },
  };
  const s = stats(p, { rootfs: 2 * Mi });
  t.deepEqual(localStorageViolation(p, s, false), {
    signal: 'ephemeralcontainerfs.limit',
    message: 'Container main exceeded its local ephemeral storage limit "1Mi". ',
  });
});
