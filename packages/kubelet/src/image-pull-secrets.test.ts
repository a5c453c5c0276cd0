import test from 'ava';
import type { Pod, Secret } from '@nodelet/api';
import type { AuthConfig, PullImageRequest } from '@nodelet/cri';
import { createLogger, EventBus, type EventCatalogue, MemorySink, VirtualClock } from '@nodelet/kernel';
import { FakeRuntime } from '@nodelet/runtime-fake';
import type { PodObjects } from '@nodelet/volume';
import { ImagePuller } from './image-puller.js';
import { apiPod, startCluster } from './apiserver/test-harness.js';
import { makePod, startHarness } from './test-harness.js';
import { dockerConfigJsonSecret, podObjectsWith, putSecrets, registryLogin } from './test-pull-secrets.js';

/**
 * Image pull secrets, on the fake runtime behind a registry stand-in: images of `reg.example.com:5000`
 * pull only with user `ci` and password `s3cret-pw`, answering otherwise as containerd does for a
 * registry's 401; every other image pulls anonymously.
 */

const PASSWORD = 's3cret-pw';
const REGISTRY = 'reg.example.com:5000';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function setup(objects?: PodObjects) {
  const clock = new VirtualClock();
  const logs = new MemorySink();
  const logger = createLogger({ sink: logs.sink, level: 'debug', now: () => clock.now() });
  const bus = new EventBus(clock, logger);
  const events: EventCatalogue['[Kubelet] Pod Event'][] = [];
  bus.subscribe('[Kubelet] Pod Event', (e) => void events.push(e));
  const runtime = new FakeRuntime({ clock, logger, config: { pullLatencyMs: 0 } });
  const pulls: { image: string; auth?: AuthConfig }[] = [];
  guardRegistry(runtime, pulls);
  const puller = new ImagePuller(runtime, clock, logger, { bus, objects });
  return { clock, logs, events, runtime, pulls, puller };
}

/** Makes the runtime's pulls from REGISTRY need the right login, and records every pull. */
function guardRegistry(runtime: FakeRuntime, pulls: { image: string; auth?: AuthConfig }[]): void {
  const pull = runtime.pullImage.bind(runtime);
  runtime.pullImage = async (req: PullImageRequest) => {
    const image = req.image!.image;
    pulls.push({ image, ...(req.auth && { auth: req.auth }) });
    if (image.startsWith(`${REGISTRY}/`) && (req.auth?.username !== 'ci' || req.auth.password !== PASSWORD)) {
      throw new Error(
        `failed to pull and unpack image "${image}": failed to resolve reference "${image}": pulling from host ${REGISTRY} failed with status code [manifests 1]: 401 Unauthorized`,
      );
    }
    return pull(req);
  };
}

function pod(pullSecrets: string[], image = `${REGISTRY}/busybox:1`): Pod {
  return makePod('app', {
    containers: [{ name: 'main', image, imagePullPolicy: 'Always' }],
    imagePullSecrets: pullSecrets.map((name) => ({ name })),
  });
}

test('a matching pull secret is passed to PullImage as the CRI AuthConfig', async (t) => {
  const objects = podObjectsWith(
    dockerConfigJsonSecret('regcred', { [REGISTRY]: registryLogin('ci', PASSWORD) }),
  );
  const { puller, pulls, events } = setup(objects);
  const p = pod(['regcred']);
  const result = await puller.ensureImageExists(p, p.spec!.containers[0]!);
  t.true(result.pulled);
  t.is(pulls.length, 1);
  t.like(pulls[0]!.auth, { username: 'ci', password: PASSWORD, auth: '', serverAddress: '' });
  t.deepEqual(
    events.map((e) => e.reason),
    ['Pulling', 'Pulled'],
  );
});

test('credentials are tried in order until a pull succeeds: the deeper match first, then the next secret', async (t) => {
  const objects = podObjectsWith(
    dockerConfigJsonSecret('old', { [`${REGISTRY}/busybox`]: registryLogin('ci', 'rotated-away') }),
    dockerConfigJsonSecret('new', { [`http://${REGISTRY}/v2/`]: registryLogin('ci', PASSWORD) }),
  );
  const { puller, pulls } = setup(objects);
  const p = pod(['new', 'old']);
  await puller.ensureImageExists(p, p.spec!.containers[0]!);
  t.deepEqual(
    pulls.map((x) => x.auth?.password),
    ['rotated-away', PASSWORD],
  );
});

test('no matching credentials: the pull is anonymous; the registry refusal is ErrImagePull with its 401, then ImagePullBackOff', async (t) => {
  const objects = podObjectsWith(
    dockerConfigJsonSecret('other', {
      'other.example.com': registryLogin('ci', PASSWORD),
      '*.example.com': registryLogin('x', 'y'),
    }),
  );
  const { puller, pulls, clock } = setup(objects);
  const p = pod(['other']);
  const container = p.spec!.containers[0]!;
  const err = await t.throwsAsync(puller.ensureImageExists(p, container), { name: 'ErrImagePull' });
  t.is(pulls.length, 1);
  t.is(pulls[0]!.auth, undefined, 'anonymous: *.example.com has two parts, reg.example.com three');
  t.regex(err!.message, /^Failed to pull image "reg\.example\.com:5000\/busybox:1": .*401 Unauthorized$/);
  await clock.advance(1_000);
  const backoff = await t.throwsAsync(puller.ensureImageExists(p, container), { name: 'ImagePullBackOff' });
  t.regex(
    backoff!.message,
    /^Back-off pulling image ".*": ErrImagePull: Failed to pull image .*401 Unauthorized$/,
  );
});

test('every credential refused: ErrImagePull with the registry messages, each once', async (t) => {
  const objects = podObjectsWith(
    dockerConfigJsonSecret('a', { [REGISTRY]: registryLogin('ci', 'wrong-1') }),
    dockerConfigJsonSecret('b', { [REGISTRY]: registryLogin('ci', 'wrong-2') }),
  );
  const { puller, pulls, logs, events } = setup(objects);
  const p = pod(['a', 'b']);
  const err = await t.throwsAsync(puller.ensureImageExists(p, p.spec!.containers[0]!), {
    name: 'ErrImagePull',
  });
  t.is(pulls.length, 2);
  t.is(err!.message.match(/401 Unauthorized/g)?.length, 1, 'the same message twice is shown once');
  const told = JSON.stringify([logs.lines(), events, err!.message]);
  for (const secret of ['wrong-1', 'wrong-2', b64('ci:wrong-1')]) t.false(told.includes(secret), secret);
});

test('a missing pull secret is a FailedToRetrieveImagePullSecret warning, and the pull goes on', async (t) => {
  const objects = podObjectsWith(
    dockerConfigJsonSecret('regcred', { [REGISTRY]: registryLogin('ci', PASSWORD) }),
  );
  const { puller, events, logs } = setup(objects);
  const p = pod(['gone', 'regcred', '', 'also-gone']);
  const result = await puller.ensureImageExists(p, p.spec!.containers[0]!);
  t.true(result.pulled, 'the secret that exists is used');
  const warning = events.find((e) => e.reason === 'FailedToRetrieveImagePullSecret');
  t.like(warning, {
    eventType: 'Warning',
    message:
      'Unable to retrieve some image pull secrets (gone, also-gone); attempting to pull the image may not succeed.',
  });
  t.is(warning!.container, undefined, 'about the pod, not a container');
  t.is(logs.find('Unable to retrieve pull secret, the image pull may not succeed.').length, 2);
});

test('without PodObjects (no API server) a pull secret cannot be read: reported, and the image pulled anonymously', async (t) => {
  const { puller, events, pulls } = setup(undefined);
  const p = pod(['regcred'], 'busybox:1.36');
  await puller.ensureImageExists(p, p.spec!.containers[0]!);
  t.is(pulls[0]!.auth, undefined);
  t.true(events.some((e) => e.reason === 'FailedToRetrieveImagePullSecret'));
});

test('Docker Hub credentials (https://index.docker.io/v1/) go with a short name like busybox', async (t) => {
  const objects = podObjectsWith(
    dockerConfigJsonSecret('hub', {
      'https://index.docker.io/v1/': { username: 'hubuser', password: 'hubpw' },
    }),
  );
  const { puller, pulls } = setup(objects);
  const p = pod(['hub'], 'busybox:1.36');
  await puller.ensureImageExists(p, p.spec!.containers[0]!);
  t.like(pulls[0]!.auth, { username: 'hubuser', password: 'hubpw' });
});

test('a malformed pull secret fails the pull as ErrImagePull naming the secret and field', async (t) => {
  const broken: Secret = {
    metadata: { name: 'broken', namespace: 'default' },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': b64(`{"auths": {"${REGISTRY}": {"auth": "${PASSWORD}"}}}`) },
  };
  const { puller, pulls } = setup(podObjectsWith(broken));
  const p = pod(['broken']);
  const err = await t.throwsAsync(puller.ensureImageExists(p, p.spec!.containers[0]!), {
    name: 'ErrImagePull',
  });
  t.is(
    err!.message,
    `Failed to pull image "${REGISTRY}/busybox:1": image pull secret "broken": .dockerconfigjson.auths["${REGISTRY}"].auth: is not base64`,
  );
  t.is(pulls.length, 0);
});

test('kubelet: a pod whose pull secret is wrong waits in ErrImagePull, then ImagePullBackOff; fixed, it runs', async (t) => {
  const objects = podObjectsWith(
    dockerConfigJsonSecret('regcred', { [REGISTRY]: registryLogin('ci', 'wrong') }),
  );
  const h = await startHarness({ objects });
  t.teardown(() => h.kubelet.stop());
  guardRegistry(h.runtime, []);
  const p = pod(['regcred']);
  p.spec!.containers[0]!.imagePullPolicy = 'IfNotPresent';
  h.source.set([p]);
  await h.clock.advance(100);
  await h.kubelet.workers.whenIdle();
  const waiting = () => h.status('uid-app').containerStatuses![0]!.state?.waiting;
  t.is(waiting()?.reason, 'ErrImagePull');
  t.regex(waiting()?.message ?? '', /401 Unauthorized/);
  await h.clock.advance(2_000);
  await h.kubelet.workers.whenIdle();
  t.is(waiting()?.reason, 'ImagePullBackOff');

  putSecrets(objects, dockerConfigJsonSecret('regcred', { [REGISTRY]: registryLogin('ci', PASSWORD) }));
  await h.clock.advance(15_000); // past the 10 s backoff
  await h.kubelet.workers.whenIdle();
  t.truthy(h.status('uid-app').containerStatuses![0]!.state?.running);
  t.false(h.logs.lines().join('\n').includes(PASSWORD));
});

test('joined to an API server: the pull secret is read from the API; a missing one is a Warning Event there', async (t) => {
  const h = await startCluster();
  t.teardown(() => h.kubelet.stop());
  const pulls: { image: string; auth?: AuthConfig }[] = [];
  guardRegistry(h.runtime, pulls);
  await h.clock.advance(1_000);
  h.api.put(
    '/api/v1/namespaces/default/secrets',
    dockerConfigJsonSecret('regcred', { [`https://${REGISTRY}`]: registryLogin('ci', PASSWORD) }),
  );
  await h.api.createPod(
    apiPod('private', {
      containers: [{ name: 'main', image: `${REGISTRY}/busybox:1`, imagePullPolicy: 'IfNotPresent' }],
      imagePullSecrets: [{ name: 'regcred' }, { name: 'absent' }],
    }),
  );
  await h.clock.advanceUntil(() => h.api.pods.get('default/private')?.status?.phase === 'Running', {
    stepMs: 100,
    maxMs: 10_000,
  });
  t.like(pulls.at(-1)?.auth, { username: 'ci', password: PASSWORD });
  await h.clock.advance(2_000);
  const warning = [...h.api.events.values()].find((e) => e.reason === 'FailedToRetrieveImagePullSecret');
  t.like(warning, {
    type: 'Warning',
    message:
      'Unable to retrieve some image pull secrets (absent); attempting to pull the image may not succeed.',
    involvedObject: { kind: 'Pod', name: 'private' },
  });
  t.false(JSON.stringify([...h.api.events.values()]).includes(PASSWORD));
});
