import test from 'ava';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeletError, notFound, unimplemented, type ErrorCode } from '@nodelet/kernel';
import type { ImageService, RuntimeService } from './capabilities.js';
import { createCriClient } from './client.js';
import {
  ContainerEventType,
  ContainerState,
  ContainerStatus,
  Image,
  type ContainerEventResponse,
  type VersionRequest,
} from './gen/runtime/v1/api.js';
import { GrpcStatus, toGrpcStatus, toNodeletError } from './grpc-status.js';
import { serveCri } from './server.js';

const REQUIRED_RUNTIME_METHODS = [
  'version',
  'runPodSandbox',
  'stopPodSandbox',
  'removePodSandbox',
  'podSandboxStatus',
  'listPodSandbox',
  'createContainer',
  'startContainer',
  'stopContainer',
  'removeContainer',
  'listContainers',
  'containerStatus',
  'updateContainerResources',
  'reopenContainerLog',
  'execSync',
  'exec',
  'attach',
  'portForward',
  'containerStats',
  'listContainerStats',
  'podSandboxStats',
  'listPodSandboxStats',
  'updateRuntimeConfig',
  'status',
] as const;

/** A RuntimeService whose methods throw Unimplemented unless overridden. */
function partialRuntime(overrides: Partial<RuntimeService>): RuntimeService {
  const rt: Record<string, unknown> = {};
  for (const name of REQUIRED_RUNTIME_METHODS)
    rt[name] = async () => Promise.reject(unimplemented(`${name} (test runtime)`));
  return Object.assign(rt, overrides) as unknown as RuntimeService;
}

const emptyImages: ImageService = {
  listImages: async () => ({ images: [] }),
  imageStatus: async () => ({ info: {} }),
  pullImage: async (r) => ({ imageRef: `sha256:${r.image?.image ?? ''}` }),
  removeImage: async () => ({}),
  imageFsInfo: async () => ({ imageFilesystems: [], containerFilesystems: [] }),
};

// A nanosecond time stamp well past 2^53 (2^53 ns is only ~104 days after the epoch).
const BIG_NANOS = 1_759_000_000_123_456_789n;

const neverSettle: Promise<never> = new Promise(() => undefined);

const runtime = partialRuntime({
  version: async (req: VersionRequest) => ({
    version: req.version,
    runtimeName: 'test',
    runtimeVersion: '0.0.1',
    runtimeApiVersion: 'v1',
  }),
  containerStatus: async (req) => {
    if (req.containerId !== 'c1') throw notFound(`container "${req.containerId}" not found`);
    return {
      status: ContainerStatus.create({
        id: 'c1',
        state: ContainerState.CONTAINER_EXITED,
        createdAt: BIG_NANOS,
        startedAt: BIG_NANOS + 1n,
        finishedAt: 9_223_372_036_854_775_807n, // int64 max
        exitCode: -1,
        reason: 'Error',
        labels: { 'io.kubernetes.pod.name': 'web' },
      }),
      info: {},
    };
  },
  listContainers: () => neverSettle,
  stopPodSandbox: async () => {
    throw new Error('plain failure');
  },
  containerEvents: async function* () {
    for (let i = 0; ; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      yield {
        containerId: `c${i}`,
        containerEventType: ContainerEventType.CONTAINER_STARTED_EVENT,
        createdAt: BIG_NANOS + BigInt(i),
        containersStatuses: [],
      } satisfies ContainerEventResponse;
    }
  },
});

async function withServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  rt: RuntimeService = runtime,
  img: ImageService = emptyImages,
  clientTimeoutMs = 5000,
) {
  const dir = await mkdtemp(join(tmpdir(), 'cri-'));
  const server = await serveCri(rt, img, `unix://${join(dir, 'cri.sock')}`);
  const client = createCriClient(server.address, { timeoutMs: clientTimeoutMs });
  t.teardown(async () => {
    client.close();
    await server.stop(100);
    await rm(dir, { recursive: true, force: true });
  });
  return { dir, server, client };
}

test('Version round-trips over a unix socket', async (t) => {
  const { client } = await withServer(t);
  const res = await client.runtime.version({ version: 'v1' });
  t.deepEqual(res, { version: 'v1', runtimeName: 'test', runtimeVersion: '0.0.1', runtimeApiVersion: 'v1' });
});

test('NotFound thrown by the server arrives as NodeletError NotFound with the same message', async (t) => {
  const { client } = await withServer(t);
  const err = await t.throwsAsync(client.runtime.containerStatus({ containerId: 'nope', verbose: false }));
  t.true(err instanceof NodeletError);
  t.is((err as NodeletError).code, 'NotFound');
  t.is(err?.message, 'container "nope" not found');
});

test('int64 nanosecond time stamps beyond 2^53 round-trip exactly', async (t) => {
  const { client } = await withServer(t);
  const { status } = await client.runtime.containerStatus({ containerId: 'c1', verbose: false });
  t.is(status?.createdAt, BIG_NANOS);
  t.is(status?.startedAt, BIG_NANOS + 1n);
  t.is(status?.finishedAt, 9_223_372_036_854_775_807n);
  t.is(status?.exitCode, -1);
  t.is(status?.state, ContainerState.CONTAINER_EXITED);
  t.deepEqual(status?.labels, { 'io.kubernetes.pod.name': 'web' });
});

test('the per-call deadline is enforced: a call that never settles fails DeadlineExceeded', async (t) => {
  const { client } = await withServer(t, runtime, emptyImages, 300);
  const started = Date.now();
  const err = await t.throwsAsync(client.runtime.listContainers({}));
  const elapsed = Date.now() - started;
  t.is((err as NodeletError).code, 'DeadlineExceeded');
  t.true(elapsed >= 250 && elapsed < 3000, `took ${elapsed} ms`);
});

test('Unimplemented: thrown by a method, and for an optional method the runtime lacks', async (t) => {
  const { client } = await withServer(t);
  const thrown = await t.throwsAsync(client.runtime.status({ verbose: false }));
  t.is((thrown as NodeletError).code, 'Unimplemented');
  const missing = await t.throwsAsync(client.runtime.runtimeConfig!({}));
  t.is((missing as NodeletError).code, 'Unimplemented');
  t.regex(missing!.message, /RuntimeConfig is not implemented/);
});

test('a plain Error thrown by the server arrives as Internal with its message', async (t) => {
  const { client } = await withServer(t);
  const err = await t.throwsAsync(client.runtime.stopPodSandbox({ podSandboxId: 'p' }));
  t.is((err as NodeletError).code, 'Internal');
  t.is(err?.message, 'plain failure');
});

test('ImageService calls round-trip', async (t) => {
  const images: ImageService = {
    ...emptyImages,
    listImages: async () => ({
      images: [
        Image.create({ id: 'sha256:abc', repoTags: ['busybox:latest'], size: 2n ** 60n, pinned: true }),
      ],
    }),
  };
  const { client } = await withServer(t, runtime, images);
  const pulled = await client.image.pullImage({
    image: {
      image: 'busybox',
      annotations: {},
      userSpecifiedImage: 'busybox',
      runtimeHandler: '',
      imageRef: '',
    },
  });
  t.is(pulled.imageRef, 'sha256:busybox');
  const { images: list } = await client.image.listImages({});
  t.is(list.length, 1);
  t.is(list[0]?.size, 2n ** 60n);
  t.deepEqual(list[0]?.repoTags, ['busybox:latest']);
  t.true(list[0]?.pinned);
  const status = await client.image.imageStatus({ verbose: false });
  t.is(status.image, undefined);
});

test('GetContainerEvents streams; breaking out of the iteration ends the call', async (t) => {
  let returned = false;
  const rt = partialRuntime({
    containerEvents: () => {
      const source = runtime.containerEvents!()[Symbol.asyncIterator]();
      return {
        [Symbol.asyncIterator]: () => ({
          next: () => source.next(),
          return: async () => {
            returned = true;
            return { done: true as const, value: undefined };
          },
        }),
      };
    },
  });
  const { client } = await withServer(t, rt);
  const seen: ContainerEventResponse[] = [];
  for await (const event of client.runtime.containerEvents!()) {
    seen.push(event);
    if (seen.length === 3) break;
  }
  t.deepEqual(
    seen.map((e) => [e.containerId, e.createdAt]),
    [
      ['c0', BIG_NANOS],
      ['c1', BIG_NANOS + 1n],
      ['c2', BIG_NANOS + 2n],
    ],
  );
  // The server notices the cancellation and closes the implementation's iterator.
  for (let i = 0; i < 50 && !returned; i++) await new Promise((r) => setTimeout(r, 20));
  t.true(returned);
});

test('GetContainerEvents against a runtime without it fails Unimplemented', async (t) => {
  const { client } = await withServer(t, partialRuntime({}));
  const err = await t.throwsAsync(async () => {
    for await (const _ of client.runtime.containerEvents!()) t.fail('no events expected');
  });
  t.is((err as NodeletError).code, 'Unimplemented');
});

test('a client of an address nobody serves fails Unavailable', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cri-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const client = createCriClient(join(dir, 'absent.sock'), { timeoutMs: 2000 });
  t.teardown(() => client.close());
  const err = await t.throwsAsync(client.runtime.version({ version: 'v1' }));
  t.is((err as NodeletError).code, 'Unavailable');
});

test('serveCri on TCP port 0 reports the chosen port', async (t) => {
  const server = await serveCri(runtime, emptyImages, '127.0.0.1:0');
  const client = createCriClient(server.address, { timeoutMs: 5000 });
  t.teardown(async () => {
    client.close();
    await server.stop(100);
  });
  t.regex(server.address, /^127\.0\.0\.1:[1-9]\d*$/);
  t.is((await client.runtime.version({ version: 'v1' })).runtimeName, 'test');
});

test('serveCri replaces a stale socket, refuses a live one and a non-socket file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cri-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  // A stale socket: its server was SIGKILLed, so nothing unlinked it (as after a crash).
  const stale = join(dir, 'stale.sock');
  const child = spawn(process.execPath, [
    '-e',
    `require('net').createServer().listen(${JSON.stringify(stale)}, () => console.log('up'))`,
  ]);
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  child.kill('SIGKILL');
  await once(child, 'exit');
  const server = await serveCri(runtime, emptyImages, stale);
  t.teardown(() => server.stop(100));
  const client = createCriClient(stale, { timeoutMs: 5000 });
  t.teardown(() => client.close());
  t.is((await client.runtime.version({ version: 'v1' })).runtimeName, 'test');

  const live = await t.throwsAsync(serveCri(runtime, emptyImages, `unix://${stale}`));
  t.is((live as NodeletError).code, 'AlreadyExists');

  const file = join(dir, 'file');
  await writeFile(file, '');
  const notSocket = await t.throwsAsync(serveCri(runtime, emptyImages, `unix://${file}`));
  t.is((notSocket as NodeletError).code, 'AlreadyExists');
});

test('grpc-status: every kernel code survives kernel → gRPC → kernel', (t) => {
  const codes: ErrorCode[] = [
    'NotFound',
    'AlreadyExists',
    'InvalidInput',
    'FailedPrecondition',
    'Unavailable',
    'DeadlineExceeded',
    'Unimplemented',
    'Internal',
  ];
  for (const code of codes) {
    const status = toGrpcStatus(new NodeletError(code, `m-${code}`));
    const back = toNodeletError({ ...status, message: `${status.code} X: m-${code}` });
    t.is(back.code, code);
    t.is(back.message, `m-${code}`);
  }
  t.is(toGrpcStatus(notFound('x')).code, GrpcStatus.NOT_FOUND);
  t.is(toGrpcStatus(new Error('boom')).code, GrpcStatus.UNKNOWN);
  t.is(
    toNodeletError({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: '', message: 'busy' }).code,
    'Unavailable',
  );
  t.is(toNodeletError({ code: GrpcStatus.OUT_OF_RANGE, details: 'bad' }).code, 'InvalidInput');
  t.is(toNodeletError('weird').code, 'Internal');
  const same = notFound('kept');
  t.is(toNodeletError(same), same);
});
