import test from 'ava';
import { isErrorCode, NodeletError } from '@nodelet/kernel';
import type { ImageSpec } from '@nodelet/cri';
import { setup, track } from './fixtures.js';
import { normalizeImageRef } from './image-ref.js';

const spec = (image: string): ImageSpec => ({
  image,
  annotations: {},
  userSpecifiedImage: image,
  runtimeHandler: '',
  imageRef: '',
});

test('references are normalised like containerd', (t) => {
  const cases: Array<[string, string]> = [
    ['busybox', 'docker.io/library/busybox:latest'],
    ['nginx:1.25', 'docker.io/library/nginx:1.25'],
    ['library/nginx', 'docker.io/library/nginx:latest'],
    ['user/app:v1', 'docker.io/user/app:v1'],
    ['docker.io/busybox', 'docker.io/library/busybox:latest'],
    ['index.docker.io/library/busybox:1', 'docker.io/library/busybox:1'],
    ['registry.k8s.io/pause:3.9', 'registry.k8s.io/pause:3.9'],
    ['localhost/app', 'localhost/app:latest'],
    ['localhost:5000/team/app:2', 'localhost:5000/team/app:2'],
    ['ghcr.io/org/sub/app', 'ghcr.io/org/sub/app:latest'],
    [`busybox@sha256:${'a'.repeat(64)}`, `docker.io/library/busybox@sha256:${'a'.repeat(64)}`],
    [`busybox:1.36@sha256:${'b'.repeat(64)}`, `docker.io/library/busybox@sha256:${'b'.repeat(64)}`],
    ['my_app-x.y__z:tag_1.0-rc', 'docker.io/library/my_app-x.y__z:tag_1.0-rc'],
  ];
  for (const [ref, want] of cases) t.is(normalizeImageRef(ref), want, ref);
});

test('malformed references are InvalidInput', (t) => {
  for (const ref of [
    '',
    'Busybox',
    'busybox:',
    'busy box',
    'busybox:-tag',
    'a//b',
    '-app',
    'app@sha256:abc',
    'UPPER.io/App',
    'a'.repeat(64),
    ' busybox',
  ]) {
    const err = t.throws(() => normalizeImageRef(ref), undefined, JSON.stringify(ref));
    t.true(isErrorCode(err, 'InvalidInput'), JSON.stringify(ref));
    t.regex(err!.message, /^failed to parse image reference ".*": invalid reference format/);
  }
  t.regex(t.throws(() => normalizeImageRef('Busybox'))!.message, /repository name must be lowercase$/);
});

test('pause and busybox are present from the start; status of an absent image has no image', async (t) => {
  const { runtime } = setup();
  const { images } = await runtime.listImages({});
  t.deepEqual(
    images.map((i) => i.repoTags),
    [['registry.k8s.io/pause:3.9'], ['docker.io/library/busybox:latest']],
  );
  t.true(images[0]!.pinned, 'the sandbox image is pinned');
  t.false(images[1]!.pinned);
  const present = await runtime.imageStatus({ image: spec('busybox'), verbose: false });
  t.regex(present.image!.id, /^sha256:[0-9a-f]{64}$/);
  t.true(present.image!.size > 0n);
  const byId = await runtime.imageStatus({ image: spec(present.image!.id), verbose: false });
  t.is(byId.image?.id, present.image!.id, 'an image id names the image too');
  const absent = await runtime.imageStatus({ image: spec('nginx'), verbose: false });
  t.is(absent.image, undefined);
});

test('pull normalises, takes pullLatencyMs on the clock, and returns the image id', async (t) => {
  const { clock, runtime } = setup({ pullLatencyMs: 3000 });
  const pull = track(runtime.pullImage({ image: spec('nginx:1.25') }));
  await clock.advance(2999);
  t.false(pull.settled);
  await clock.advance(1);
  const { imageRef } = await pull.promise;
  const status = await runtime.imageStatus({ image: spec('docker.io/library/nginx:1.25'), verbose: false });
  t.is(status.image?.id, imageRef);
  t.deepEqual(status.image?.repoTags, ['docker.io/library/nginx:1.25']);
  t.regex(status.image!.repoDigests[0]!, /^docker\.io\/library\/nginx@sha256:[0-9a-f]{64}$/);
  const again = await runtime.imageStatus({ image: spec(status.image!.repoDigests[0]!), verbose: false });
  t.is(again.image?.id, imageRef, 'the repo digest names the same image');
  const filtered = await runtime.listImages({ filter: { image: spec('nginx:1.25') } });
  t.deepEqual(
    filtered.images.map((i) => i.id),
    [imageRef],
  );
});

test('a missing image fails like a registry 404, after the latency', async (t) => {
  const { clock, runtime } = setup({
    missingImages: ['nope', 'example.com/private/app:v2'],
    pullLatencyMs: 100,
  });
  const pull = runtime.pullImage({ image: spec('nope') });
  const settled = track(pull);
  await clock.advance(99);
  t.false(settled.settled);
  await clock.advance(1);
  const err = await t.throwsAsync(pull);
  t.true(err instanceof NodeletError && err.code === 'NotFound');
  t.is(
    err?.message,
    'failed to pull and unpack image "docker.io/library/nope:latest": failed to resolve reference "docker.io/library/nope:latest": docker.io/library/nope:latest: not found',
  );
  // A reference without a tag stands for the whole repository; one with a tag only for that tag.
  const pulling = [
    runtime.pullImage({ image: spec('nope:1.0') }),
    runtime.pullImage({ image: spec('example.com/private/app:v2') }),
  ];
  const ok = runtime.pullImage({ image: spec('example.com/private/app:v1') });
  await clock.advance(100);
  for (const p of pulling) t.true(isErrorCode(await t.throwsAsync(p), 'NotFound'));
  await t.notThrowsAsync(ok);

  runtime.setImageMissing('nope', false);
  runtime.setImageMissing('busybox:2');
  const back = runtime.pullImage({ image: spec('nope') });
  const gone = runtime.pullImage({ image: spec('busybox:2') });
  await clock.advance(100);
  await t.notThrowsAsync(back);
  t.true(isErrorCode(await t.throwsAsync(gone), 'NotFound'));
});

test('a malformed reference fails InvalidInput at once, without waiting out the latency', async (t) => {
  const { runtime } = setup({ pullLatencyMs: 60_000 });
  const err = await t.throwsAsync(runtime.pullImage({ image: spec('Not/Valid:') }));
  t.true(isErrorCode(err, 'InvalidInput'));
  t.true(
    isErrorCode(
      await t.throwsAsync(runtime.imageStatus({ image: spec('bad ref'), verbose: false })),
      'InvalidInput',
    ),
  );
});

test('RemoveImage by id removes every name of the image and is idempotent; ImageFsInfo sums sizes', async (t) => {
  const { runtime } = setup({ pullLatencyMs: 0 });
  await runtime.pullImage({ image: spec('nginx') });
  const before = (await runtime.imageFsInfo({})).imageFilesystems[0]!;
  const nginx = (await runtime.imageStatus({ image: spec('nginx'), verbose: false })).image!;
  await runtime.removeImage({ image: spec(nginx.id) });
  t.is((await runtime.imageStatus({ image: spec('nginx'), verbose: false })).image, undefined);
  t.is((await runtime.imageStatus({ image: spec(nginx.repoDigests[0]!), verbose: false })).image, undefined);
  await t.notThrowsAsync(runtime.removeImage({ image: spec('nginx') }));
  const after = (await runtime.imageFsInfo({})).imageFilesystems[0]!;
  t.is(before.usedBytes!.value - after.usedBytes!.value, nginx.size);
  t.is(after.fsId?.mountpoint, '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs');
  t.is(runtime.loadImage('nginx'), nginx.id, 'ids are derived from the name: stable across runs');
});

test('preloadedImages replaces the default list; a bad entry is refused naming it', (t) => {
  const { runtime } = setup({ preloadedImages: ['alpine:3.20'] });
  t.deepEqual(runtime.counts().images, 1);
  t.throws(() => setup({ preloadedImages: ['ok', 'Bad'] }), {
    message: /^runtime-fake: preloadedImages\[1\]: failed to parse image reference "Bad"/,
  });
});
