import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { NodeletError, RealClock } from '@nodelet/kernel';
import {
  CreateContainerRequest,
  ImageSpec,
  RunPodSandboxRequest,
  serveCri,
  type ImageService,
  type RuntimeService,
} from '@nodelet/cri';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { RemoteCri } from './remote-cri.js';

const imageSpec = (image: string) => ImageSpec.fromPartial({ image });

async function tempDir(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'runtime-cri-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function remote(t: ExecutionContext, options: ConstructorParameters<typeof RemoteCri>[0]): RemoteCri {
  const r = new RemoteCri({ runtimeRequestTimeoutMs: 5000, ...options });
  t.teardown(() => r.close());
  return r;
}

async function serveFake(
  t: ExecutionContext,
  endpoint: string,
  fake = new FakeRuntime({ clock: new RealClock() }),
) {
  const server = await serveCri(fake, fake, endpoint);
  t.teardown(() => server.stop(100));
  return { fake, server };
}

async function startupError(t: ExecutionContext, r: RemoteCri): Promise<NodeletError> {
  const err = await t.throwsAsync(r.validate());
  t.true(err instanceof NodeletError, String(err));
  return err as NodeletError;
}

test('a missing socket: the startup error names the socket and the flag to change', async (t) => {
  const dir = await tempDir(t);
  const socket = join(dir, 'containerd.sock');
  const err = await startupError(
    t,
    remote(t, { runtimeEndpoint: `unix://${socket}`, runtimeLabel: 'containerd' }),
  );
  t.is(err.code, 'Unavailable');
  t.is(
    err.message,
    `cannot connect to containerd at unix://${socket}: no such socket (${socket}); is containerd running? set the socket with --container-runtime-endpoint (KubeletConfiguration containerRuntimeEndpoint)`,
  );
});

test('a path that is not a socket, and a stale socket nobody listens on, are startup errors', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'file');
  await writeFile(file, '');
  const notSocket = await startupError(t, remote(t, { runtimeEndpoint: file }));
  t.regex(
    notSocket.message,
    new RegExp(
      `^cannot connect to the container runtime at ${file}: ${file} is not a socket; set the socket with --container-runtime-endpoint`,
    ),
  );

  // A socket file left by a runtime that was killed: it exists, but the dial is refused.
  const stale = join(dir, 'stale.sock');
  const child = spawn(process.execPath, [
    '-e',
    `require('net').createServer().listen(${JSON.stringify(stale)}, () => console.log('up'))`,
  ]);
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  child.kill('SIGKILL');
  await once(child, 'exit');
  const refused = await startupError(t, remote(t, { runtimeEndpoint: `unix://${stale}` }));
  t.regex(refused.message, /^cannot connect to the container runtime at unix:\/\/.*stale\.sock: /);
  t.regex(refused.message, /--container-runtime-endpoint/);
});

test('a runtime that does not speak CRI v1 is refused, naming what it speaks', async (t) => {
  const dir = await tempDir(t);
  const endpoint = `unix://${join(dir, 'old.sock')}`;
  const old = {
    version: async () => ({
      version: '0.1.0',
      runtimeName: 'containerd',
      runtimeVersion: '1.4.13',
      runtimeApiVersion: 'v1alpha2',
    }),
  } as unknown as RuntimeService;
  const server = await serveCri(old, {} as ImageService, endpoint);
  t.teardown(() => server.stop(100));
  const err = await startupError(t, remote(t, { runtimeEndpoint: endpoint }));
  t.is(err.code, 'FailedPrecondition');
  t.regex(
    err.message,
    /^the container runtime at unix:\/\/\S+ \(containerd 1\.4\.13\) speaks CRI API "v1alpha2"; nodelet speaks CRI v1 \(runtime\.v1\) only/,
  );
});

test('a gRPC server without the runtime.v1 services is refused as not serving CRI v1', async (t) => {
  const dir = await tempDir(t);
  const socket = join(dir, 'other.sock');
  const server = new Server();
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  t.teardown(() => server.forceShutdown());
  const err = await startupError(t, remote(t, { runtimeEndpoint: socket }));
  t.is(err.code, 'FailedPrecondition');
  t.regex(
    err.message,
    new RegExp(`^${socket} does not serve CRI v1 \\(Version of runtime.v1.RuntimeService answered: `),
  );
});

test('validate: Version answers, the image service answers; one connection for both', async (t) => {
  const dir = await tempDir(t);
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  await serveFake(t, endpoint);
  const r = remote(t, { runtimeEndpoint: endpoint });
  const info = await r.validate();
  t.is(info.version.runtimeName, 'nodelet-fake');
  t.is(info.version.runtimeApiVersion, 'v1');
  t.is(info.imageEndpoint, endpoint);
  await r.image.listImages({});
  t.is(r.channelsDialled, 1, 'runtime and image calls share one channel');
});

test('a separate image endpoint gets its own connection, and image calls go there', async (t) => {
  const dir = await tempDir(t);
  const runtimeEndpoint = `unix://${join(dir, 'runtime.sock')}`;
  const imageEndpoint = `unix://${join(dir, 'image.sock')}`;
  await serveFake(t, runtimeEndpoint);
  const { fake: images } = await serveFake(t, imageEndpoint);
  images.loadImage('nodelet.test/only-here:1');
  const r = remote(t, { runtimeEndpoint, imageEndpoint });
  await r.validate();
  const { image } = await r.image.imageStatus({
    image: {
      image: 'nodelet.test/only-here:1',
      annotations: {},
      userSpecifiedImage: '',
      runtimeHandler: '',
      imageRef: '',
    },
    verbose: false,
  });
  t.truthy(image);
  t.is(r.channelsDialled, 2);

  // A missing image socket is named as such.
  const missing = join(dir, 'no-image.sock');
  const err = await startupError(t, remote(t, { runtimeEndpoint, imageEndpoint: missing }));
  t.regex(
    err.message,
    new RegExp(
      `^cannot connect to the image service at ${missing}: no such socket .*--image-service-endpoint`,
    ),
  );
});

test('reconnects: calls fail Unavailable while the runtime is down, the next call after it is back works', async (t) => {
  const dir = await tempDir(t);
  const socket = join(dir, 'cri.sock');
  const endpoint = `unix://${socket}`;
  const fake = new FakeRuntime({ clock: new RealClock() });
  let server = await serveCri(fake, fake, endpoint);
  t.teardown(() => server.stop(100));
  const r = remote(t, { runtimeEndpoint: endpoint });
  await r.validate();

  // Down, with calls made during the outage.
  await server.stop(100);
  for (let i = 0; i < 3; i++) {
    const err = await t.throwsAsync(r.runtime.version({ version: '0.1.0' }));
    t.is((err as NodeletError).code, 'Unavailable');
    t.regex(
      err!.message,
      new RegExp(`^cannot connect to the container runtime at ${endpoint}: connect ENOENT`),
    );
  }
  server = await serveCri(fake, fake, endpoint);
  t.is((await r.runtime.version({ version: '0.1.0' })).runtimeName, 'nodelet-fake');

  // Down and back with no call in between: the next call works too.
  await server.stop(100);
  server = await serveCri(fake, fake, endpoint);
  t.is((await r.image.listImages({})).images.length, 2);
  t.is((await r.runtime.listPodSandbox({})).items.length, 0);
});

test('a call in flight is not cut short when another call retires its channel', async (t) => {
  const dir = await tempDir(t);
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  const fake = new FakeRuntime({ clock: new RealClock(), config: { pullLatencyMs: 600 } });
  let entered!: () => void;
  const pullEntered = new Promise<void>((resolve) => (entered = resolve));
  const images: ImageService = {
    listImages: (r) => fake.listImages(r),
    imageStatus: (r) => fake.imageStatus(r),
    removeImage: (r) => fake.removeImage(r),
    imageFsInfo: (r) => fake.imageFsInfo(r),
    pullImage: (r) => {
      entered();
      return fake.pullImage(r);
    },
  };
  const server = await serveCri(fake, images, endpoint);
  t.teardown(() => server.stop(100));
  const r = remote(t, { runtimeEndpoint: endpoint });
  await r.validate();
  const pulling = r.image.pullImage({ image: imageSpec('nodelet.test/slow:1') });
  await pullEntered;
  fake.setAvailable(false);
  const err = await t.throwsAsync(r.runtime.version({ version: '0.1.0' }));
  t.is((err as NodeletError).code, 'Unavailable', 'this retires the channel');
  fake.setAvailable(true);
  t.regex((await pulling).imageRef, /^sha256:/, 'the pull on the retired channel finished');
  t.is(r.channelsDialled, 1, 'no new channel yet: the next call dials it');
  await r.runtime.version({ version: '0.1.0' });
  t.is(r.channelsDialled, 2);
});

test('deadlines: runtimeRequestTimeoutMs bounds calls, pullTimeoutMs bounds pulls (none by default)', async (t) => {
  const dir = await tempDir(t);
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  const fake = new FakeRuntime({ clock: new RealClock(), config: { pullLatencyMs: 1500 } });
  await serveFake(t, endpoint, fake);
  const bounded = remote(t, { runtimeEndpoint: endpoint, runtimeRequestTimeoutMs: 300, pullTimeoutMs: 400 });
  const started = Date.now();
  const err = await t.throwsAsync(bounded.image.pullImage({ image: imageSpec('nodelet.test/a:1') }));
  t.is((err as NodeletError).code, 'DeadlineExceeded');
  t.true(Date.now() - started < 1400, 'the pull deadline, not the latency, ended it');

  // No pull deadline: a pull may take longer than the call deadline; so may an exec without timeout.
  const unbounded = remote(t, { runtimeEndpoint: endpoint, runtimeRequestTimeoutMs: 300 });
  t.regex((await unbounded.image.pullImage({ image: imageSpec('nodelet.test/b:1') })).imageRef, /^sha256:/);
  const { podSandboxId } = await unbounded.runtime.runPodSandbox(
    RunPodSandboxRequest.fromPartial({ config: { metadata: { name: 'p', namespace: 'd', uid: 'u' } } }),
  );
  const { containerId } = await unbounded.runtime.createContainer(
    CreateContainerRequest.fromPartial({
      podSandboxId,
      config: { metadata: { name: 'c' }, image: { image: 'busybox' } },
    }),
  );
  await unbounded.runtime.startContainer({ containerId });
  const exec = await unbounded.runtime.execSync({ containerId, cmd: ['sleep', '0.5'], timeout: 0n });
  t.is(exec.exitCode, 0);
});
